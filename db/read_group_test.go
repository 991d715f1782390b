package db_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

// holdReads makes every statement that reads the tools wait, as the first
// step of a check does, until the returned function is called.
func holdReads(t *testing.T, f *blockFixture) (release func()) {
	t.Helper()
	tx := f.holding(t, `LOCK TABLE tools IN ACCESS EXCLUSIVE MODE`)
	return func() { _ = tx.Rollback(context.Background()) }
}

// waitingReads waits until n statements wait for the lock holdReads took.
func waitingReads(t *testing.T, f *blockFixture, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := f.store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statements wait for the lock, want %d", waiting, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// newReadFixture is a fixture whose tool its policy allows, read by one
// reader at a time, and a runtime's key.
func newReadFixture(t *testing.T) (*blockFixture, string) {
	t.Helper()
	f := newBlockFixture(t)
	f.setMode(t, approval.ModeAllow)
	f.store.SetMaxReaders(1)
	return f, f.runtimeKey(t)
}

// queued waits until n checks wait for the next group read.
func queued(t *testing.T, store *db.DB, n int) {
	t.Helper()
	awaitCount(t, "checks queued for the next read", store.ReadsQueued, n)
}

// awaitCount waits until count gives n, for 10 s at most.
func awaitCount(t *testing.T, what string, count func() int, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); count() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d %s, want %d", count(), what, n)
		}
		time.Sleep(time.Millisecond)
	}
}

type checkAnswer struct {
	res db.CheckResult
	err error
}

// goCheck starts req as a runtime's check sent with raw.
func goCheck(ctx context.Context, f *blockFixture, raw string, req db.CheckRequest) chan checkAnswer {
	out := make(chan checkAnswer, 1)
	go func() {
		res, err := f.keyCheck(ctx, raw, req)
		out <- checkAnswer{res, err}
	}()
	return out
}

func answer(t *testing.T, c chan checkAnswer) checkAnswer {
	t.Helper()
	select {
	case a := <-c:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("the check did not return")
		return checkAnswer{}
	}
}

// The checks that arrive while a group read is in flight are read together
// by the next statement, and each gets its own answer.
func TestChecksReadTogether(t *testing.T) {
	f, raw := newReadFixture(t)
	ctx := context.Background()
	call := func(n int) db.CheckRequest {
		return db.CheckRequest{CallID: fmt.Sprint("call-", n), TurnID: "turn", Tool: "send_email", Arguments: fmt.Sprintf(`{"n":%d}`, n)}
	}
	before := f.store.GroupStats()
	release := holdReads(t, f)
	first := goCheck(ctx, f, raw, call(0))
	waitingReads(t, f, 1) // the first is read at once, alone
	var rest []chan checkAnswer
	for n := 1; n <= 5; n++ {
		rest = append(rest, goCheck(ctx, f, raw, call(n)))
	}
	queued(t, f.store, 5)
	release()
	for i, c := range append([]chan checkAnswer{first}, rest...) {
		if a := answer(t, c); a.err != nil || a.res.Outcome.Verdict != approval.Allow {
			t.Fatalf("check %d: %v %+v", i, a.err, a.res.Outcome)
		}
	}
	after := f.store.GroupStats()
	if d := after.Since(before); d.ReadGroups != 2 || d.Reads != 6 {
		t.Fatalf("6 checks read by %d statements carrying %d, want 2 carrying 6", d.ReadGroups, d.Reads)
	}
}

// One statement reads checks that must each be answered on their own: a
// live key, a revoked one, an unknown one, an unknown tool, a call already
// pending, a caller gone while queued; and a value Postgres refuses fails
// its own check only.
func TestGroupReadAnswersEachCheck(t *testing.T) {
	f := newBlockFixture(t)
	f.store.SetMaxReaders(1)
	ctx := context.Background()
	raw := f.runtimeKey(t)
	// A call left pending while the tool asked, and the tool now allowed.
	open, err := f.keyCheck(ctx, raw, db.CheckRequest{CallID: "open", TurnID: "turn", Tool: "send_email", Arguments: `{"n":"open"}`})
	if err != nil || open.Approval == nil {
		t.Fatalf("pending: %v %+v", err, open.Outcome)
	}
	f.setMode(t, approval.ModeAllow)
	if res, err := f.keyCheck(ctx, raw, db.CheckRequest{CallID: "learn", TurnID: "turn", Tool: "send_email", Arguments: `{}`}); err != nil || res.Outcome.Verdict != approval.Allow {
		t.Fatalf("allowed: %v %+v", err, res.Outcome)
	}
	if f.store.ReadsFactsFirst("mail", "send_email") {
		t.Fatal("the tool is still known to ask: its checks would not be read in a group")
	}
	revoked := f.runtimeKey(t)
	keys, err := f.store.ListAPIKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.RevokeAPIKey(ctx, keys[0].ID, f.user); err != nil {
		t.Fatal(err)
	}
	unknownKey := revoked + "x"

	before := f.store.GroupStats()
	release := holdReads(t, f)
	first := goCheck(ctx, f, raw, db.CheckRequest{CallID: "first", TurnID: "turn", Tool: "send_email", Arguments: `{}`})
	waitingReads(t, f, 1)
	allowed := goCheck(ctx, f, raw, db.CheckRequest{CallID: "a", TurnID: "turn", Tool: "send_email", Arguments: `{"n":1}`})
	byRevoked := goCheck(ctx, f, revoked, db.CheckRequest{CallID: "b", TurnID: "turn", Tool: "send_email", Arguments: `{"n":2}`})
	byUnknown := goCheck(ctx, f, unknownKey, db.CheckRequest{CallID: "c", TurnID: "turn", Tool: "send_email", Arguments: `{"n":3}`})
	noTool := goCheck(ctx, f, raw, db.CheckRequest{CallID: "d", TurnID: "turn", Tool: "no_such_tool", Arguments: `{"n":4}`})
	again := goCheck(ctx, f, raw, db.CheckRequest{CallID: "open", TurnID: "turn", Tool: "send_email", Arguments: `{"n":"open"}`})
	gone, cancel := context.WithCancel(ctx)
	left := goCheck(gone, f, raw, db.CheckRequest{CallID: "f", TurnID: "turn", Tool: "send_email", Arguments: `{"n":6}`})
	queued(t, f.store, 6)
	cancel()
	if a := answer(t, left); !errors.Is(a.err, context.Canceled) {
		t.Fatalf("a check whose caller left while queued: %v %+v", a.err, a.res.Outcome)
	}
	release()

	if a := answer(t, first); a.err != nil || a.res.Outcome.Verdict != approval.Allow {
		t.Fatalf("first: %v %+v", a.err, a.res.Outcome)
	}
	if a := answer(t, allowed); a.err != nil || a.res.Outcome.Verdict != approval.Allow {
		t.Fatalf("allowed: %v %+v", a.err, a.res.Outcome)
	}
	for name, c := range map[string]chan checkAnswer{"revoked key": byRevoked, "unknown key": byUnknown} {
		if a := answer(t, c); approval.KindOf(a.err) != approval.KindUnauthorized {
			t.Fatalf("%s: %v %+v", name, a.err, a.res.Outcome)
		}
	}
	if a := answer(t, noTool); approval.AsError(a.err) == nil || approval.AsError(a.err).Code != approval.CodeUnknownTool {
		t.Fatalf("unknown tool: %v %+v", a.err, a.res.Outcome)
	}
	if a := answer(t, again); a.err != nil || a.res.Approval == nil || a.res.Approval.ID != open.Approval.ID {
		t.Fatalf("the call already pending: %v %+v %+v", a.err, a.res.Outcome, a.res.Approval)
	}
	after := f.store.GroupStats()
	// The first alone, then the five still waiting together.
	if d := after.Since(before); d.ReadGroups != 2 || d.Reads != 6 {
		t.Fatalf("%d statements carrying %d checks, want 2 carrying 6", d.ReadGroups, d.Reads)
	}

	// A value Postgres refuses fails its own check only: the group is read
	// again one check at a time.
	before = after
	release = holdReads(t, f)
	first = goCheck(ctx, f, raw, db.CheckRequest{CallID: "first", TurnID: "turn 2", Tool: "send_email", Arguments: `{}`})
	waitingReads(t, f, 1)
	allowed = goCheck(ctx, f, raw, db.CheckRequest{CallID: "a", TurnID: "turn 2", Tool: "send_email", Arguments: `{"n":1}`})
	refused := goCheck(ctx, f, raw, db.CheckRequest{CallID: "e", TurnID: "turn\x00", Tool: "send_email", Arguments: `{"n":5}`})
	queued(t, f.store, 2)
	release()
	for name, c := range map[string]chan checkAnswer{"first": first, "allowed": allowed} {
		if a := answer(t, c); a.err != nil || a.res.Outcome.Verdict != approval.Allow {
			t.Fatalf("%s, grouped with a refused value: %v %+v", name, a.err, a.res.Outcome)
		}
	}
	if a := answer(t, refused); a.err == nil || a.res.Outcome.Verdict == approval.Allow {
		t.Fatalf("a value Postgres refuses: %v %+v", a.err, a.res.Outcome)
	}
	after = f.store.GroupStats()
	// The first alone; the two together, refused (not counted); then each
	// alone, the allowed one answered.
	if d := after.Since(before); d.ReadGroups != 2 || d.Reads != 2 {
		t.Fatalf("%d statements answered carrying %d checks, want 2 carrying 2", d.ReadGroups, d.Reads)
	}
}

// A reader whose statement fails answers every check of its group with
// the failure: none of them runs.
func TestGroupReadFailureFailsItsChecks(t *testing.T) {
	f, raw := newReadFixture(t)
	ctx := context.Background()
	before := f.store.GroupStats()
	release := holdReads(t, f)
	first := goCheck(ctx, f, raw, db.CheckRequest{CallID: "first", TurnID: "turn", Tool: "send_email", Arguments: `{}`})
	waitingReads(t, f, 1)
	var rest []chan checkAnswer
	for n := range 3 {
		rest = append(rest, goCheck(ctx, f, raw, db.CheckRequest{CallID: fmt.Sprint("c", n), TurnID: "turn", Tool: "send_email",
			Arguments: fmt.Sprintf(`{"n":%d}`, n)}))
	}
	queued(t, f.store, 3)
	// Every statement waiting on the lock is ended as an administrator
	// would end it.
	var ended int
	if err := f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock') c`).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("statements cancelled: %d %v", ended, err)
	}
	if a := answer(t, first); a.err == nil || a.res.Outcome.Verdict == approval.Allow {
		t.Fatalf("the cancelled statement's check: %v %+v", a.err, a.res.Outcome)
	}
	// The others are read by the next statement, one for the three, which
	// waits in turn: end it too. A failure that is not a refused value is
	// not tried again check by check.
	waitingReads(t, f, 1)
	if err := f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock') c`).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("statements cancelled: %d %v", ended, err)
	}
	for i, c := range rest {
		if a := answer(t, c); a.err == nil || a.res.Outcome.Verdict == approval.Allow {
			t.Fatalf("check %d of the failed group: %v %+v", i, a.err, a.res.Outcome)
		}
	}
	waitingReads(t, f, 0)
	release()
	if res, err := f.keyCheck(ctx, raw, db.CheckRequest{CallID: "after", TurnID: "turn", Tool: "send_email", Arguments: `{}`}); err != nil || res.Outcome.Verdict != approval.Allow {
		t.Fatalf("a check after the failures: %v %+v", err, res.Outcome)
	}
	// Only the statement that answered counts.
	if d := f.store.GroupStats().Since(before); d.ReadGroups != 1 || d.Reads != 1 {
		t.Fatalf("counted %d statements carrying %d checks, want 1 carrying 1", d.ReadGroups, d.Reads)
	}
}

// One statement reads at most MaxGroupReads checks; a group whose callers
// all left is not read, and the reader goes on.
func TestGroupReadsAreBounded(t *testing.T) {
	f, raw := newReadFixture(t)
	ctx := context.Background()
	call := func(name string, n int) db.CheckRequest {
		return db.CheckRequest{CallID: fmt.Sprint(name, n), TurnID: "turn", Tool: "send_email", Arguments: fmt.Sprintf(`{"n":%d}`, n)}
	}
	before := f.store.GroupStats()
	release := holdReads(t, f)
	first := goCheck(ctx, f, raw, call("first", 0))
	waitingReads(t, f, 1)
	n := db.MaxGroupReads + 2
	var rest []chan checkAnswer
	for i := range n {
		rest = append(rest, goCheck(ctx, f, raw, call("c", i)))
	}
	queued(t, f.store, n)
	release()
	for i, c := range append([]chan checkAnswer{first}, rest...) {
		if a := answer(t, c); a.err != nil || a.res.Outcome.Verdict != approval.Allow {
			t.Fatalf("check %d: %v %+v", i, a.err, a.res.Outcome)
		}
	}
	after := f.store.GroupStats()
	if d := after.Since(before); d.ReadGroups != 3 || d.Reads != int64(n)+1 {
		t.Fatalf("%d checks read by %d statements carrying %d, want 3 (1, %d, 2)", n+1, d.ReadGroups, d.Reads, db.MaxGroupReads)
	}

	before = after
	release = holdReads(t, f)
	first = goCheck(ctx, f, raw, call("again", 0))
	waitingReads(t, f, 1)
	gone, cancel := context.WithCancel(ctx)
	left := []chan checkAnswer{goCheck(gone, f, raw, call("left", 1)), goCheck(gone, f, raw, call("left", 2))}
	queued(t, f.store, 2)
	cancel()
	for _, c := range left {
		if a := answer(t, c); !errors.Is(a.err, context.Canceled) {
			t.Fatalf("a check whose caller left: %v %+v", a.err, a.res.Outcome)
		}
	}
	release()
	if a := answer(t, first); a.err != nil || a.res.Outcome.Verdict != approval.Allow {
		t.Fatalf("first: %v %+v", a.err, a.res.Outcome)
	}
	if res, err := f.keyCheck(ctx, raw, call("after", 0)); err != nil || res.Outcome.Verdict != approval.Allow {
		t.Fatalf("a check after a group nobody waited for: %v %+v", err, res.Outcome)
	}
	if d := f.store.GroupStats().Since(before); d.ReadGroups != 2 || d.Reads != 2 {
		t.Fatalf("counted %d statements carrying %d checks, want 2 carrying 2", d.ReadGroups, d.Reads)
	}
}
