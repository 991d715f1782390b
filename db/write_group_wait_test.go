package db_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/jackc/pgx/v5"
)

// The writer waits for the checks on their way before it writes a group:
// a check queued while two others are under way is written with the one
// that queues, once the other has left without writing — not before, and
// not only when the writer's wait runs out.
func TestGroupWaitsForChecksOnTheWay(t *testing.T) {
	f := newBlockFixture(t)
	f.store.SetGroupLinger(time.Minute)
	queuing, leaving := f.store.OnTheWay(), f.store.OnTheWay()
	t.Cleanup(func() { queuing.Leave(); leaving.Leave() })
	first := f.openGrouped(t, "first", nil)
	notWritten(t, "alone", first)
	second := f.openGrouped(t, "second", queuing)
	notWritten(t, "with one still on its way", first, second)
	leaving.Leave()
	if n := f.transactions(t, written(t, first, second)...); n != 1 {
		t.Fatalf("the two checks were written in %d transactions, want one", n)
	}
}

// After a group, the writer waits, at most its linger, until as many
// checks are queued as that group took: a check that arrives alone waits
// for the next, and both are written in one transaction.
func TestGroupWaitsForAsManyAsItsLast(t *testing.T) {
	f := newBlockFixture(t)
	f.store.SetGroupLinger(time.Minute)
	way := f.store.OnTheWay()
	t.Cleanup(way.Leave)
	first := f.openGrouped(t, "first", nil)
	f.awaitQueued(t, 1)
	second := f.openGrouped(t, "second", way)
	if n := f.transactions(t, written(t, first, second)...); n != 1 {
		t.Fatalf("the first two checks were written in %d transactions, want one", n)
	}
	third := f.openGrouped(t, "third", nil)
	notWritten(t, "alone after a group of two", third)
	fourth := f.openGrouped(t, "fourth", nil)
	if n := f.transactions(t, written(t, third, fourth)...); n != 1 {
		t.Fatalf("the third and fourth checks were written in %d transactions, want one", n)
	}
}

// A wait for the last group's size ends at the linger with what came, and
// then the next group does not wait for that size: once the runtimes stop
// coming back, a check waits for others at most once.
func TestGroupWaitRunsOutOnce(t *testing.T) {
	const linger = 3 * time.Second
	f := newBlockFixture(t)
	f.store.SetGroupLinger(linger)
	ways := []*db.OnTheWayCount{f.store.OnTheWay(), f.store.OnTheWay()}
	t.Cleanup(func() { ways[0].Leave(); ways[1].Leave() })
	a := f.openGrouped(t, "a", nil)
	f.awaitQueued(t, 1)
	b, c := f.openGrouped(t, "b", ways[0]), f.openGrouped(t, "c", ways[1])
	if n := f.transactions(t, written(t, a, b, c)...); n != 1 {
		t.Fatalf("a group of three was written in %d transactions, want one", n)
	}
	// Two of the three come back; the wait for three runs out.
	d := f.openGrouped(t, "d", nil)
	f.awaitQueued(t, 1)
	e := f.openGrouped(t, "e", nil)
	if n := f.transactions(t, written(t, d, e)...); n != 1 {
		t.Fatalf("the two that came back were written in %d transactions, want one", n)
	}
	// The next check does not wait for two: it is written at once, not a
	// linger later.
	start := time.Now()
	written(t, f.openGrouped(t, "alone", nil))
	if took := time.Since(start); took >= linger*2/3 {
		t.Fatalf("a check after a wait that ran out waited %s for others", took)
	}
}

// A group takes at most the writer's limit: five checks queued together
// under a limit of two are written as groups of two, two and one, every
// one of them, and the checks left over are written without waiting
// for more.
func TestGroupsTakeAtMostTheLimit(t *testing.T) {
	const linger = 5 * time.Second
	f := newBlockFixture(t)
	f.store.SetGroupLinger(linger)
	f.store.LimitWriteGroups(2)
	ways := make([]*db.OnTheWayCount, 5)
	for i := range ways {
		ways[i] = f.store.OnTheWay()
	}
	t.Cleanup(func() {
		for _, w := range ways {
			w.Leave()
		}
	})
	start := time.Now()
	var chs []chan checkAnswer
	for i, w := range ways {
		chs = append(chs, f.openGrouped(t, fmt.Sprintf("call-%d", i), w))
	}
	ids := written(t, chs...)
	if took := time.Since(start); took >= linger {
		t.Fatalf("the checks left over waited for more: %s", took)
	}
	rows, err := f.store.Pool.Query(context.Background(), `SELECT count(*) FROM audit_events WHERE approval_id = ANY($1)
		GROUP BY xid ORDER BY count(*) DESC`, ids)
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sizes, []int{2, 2, 1}) {
		t.Fatalf("groups of %v; want 2, 2 and 1", sizes)
	}
}

// openGrouped starts a pending check of call through the group writer,
// counted on its way by way (nil: not counted).
func (f *blockFixture) openGrouped(t *testing.T, call string, way *db.OnTheWayCount) chan checkAnswer {
	t.Helper()
	ch := make(chan checkAnswer, 1)
	go func() {
		res, err := f.store.OpenPendingGroupedOnTheWay(context.Background(), f.key, f.groupRequest(call), f.tool, way)
		ch <- checkAnswer{res, err}
	}()
	return ch
}

// awaitQueued waits until n checks are queued for the group writer.
func (f *blockFixture) awaitQueued(t *testing.T, n int) {
	t.Helper()
	awaitCount(t, "checks queued for the writer", f.store.WritesQueued, n)
}

// notWritten fails if any of chs is answered within 200 ms.
func notWritten(t *testing.T, what string, chs ...chan checkAnswer) {
	t.Helper()
	for _, ch := range chs {
		select {
		case a := <-ch:
			t.Fatalf("%s: written too early (%v)", what, a.err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// written waits for each of chs to be answered with an item and returns
// the items' ids.
func written(t *testing.T, chs ...chan checkAnswer) []string {
	t.Helper()
	var ids []string
	for _, ch := range chs {
		a := answer(t, ch)
		if a.err != nil || a.res.Approval == nil {
			t.Fatalf("%v %+v", a.err, a.res)
		}
		ids = append(ids, a.res.Approval.ID)
	}
	return ids
}

// transactions is how many transactions wrote the audit lines of the
// items ids.
func (f *blockFixture) transactions(t *testing.T, ids ...string) int {
	t.Helper()
	var n int
	if err := f.store.Pool.QueryRow(context.Background(), `SELECT count(DISTINCT xid) FROM audit_events WHERE approval_id = ANY($1)`,
		ids).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A runtime's check of a tool that asks is counted on its way to the
// writer while it reads, and a check of a tool its policy allows is not;
// no path leaves a check counted.
func TestChecksCountedOnTheirWay(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	err := f.store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: []db.ToolSync{{Name: "send_email", DisplayName: "Send email"}, {Name: "search", DisplayName: "Search"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "mail", "search", approval.Policy{Mode: approval.ModeAllow}); err != nil {
		t.Fatal(err)
	}
	raw := f.runtimeKey(t)
	var calls atomic.Int64
	check := func(ctx context.Context, key, tool, call string, attach bool) (db.CheckResult, error) {
		n := calls.Add(1)
		if call == "" {
			call = fmt.Sprint("c", n)
		}
		return f.keyCheck(ctx, key, db.CheckRequest{CallID: call, TurnID: "t", Tool: tool, Arguments: fmt.Sprintf(`{"n":%d}`, n),
			AttachToPending: attach})
	}
	none := func(what string) {
		t.Helper()
		if c := f.store.Coming(); c != 0 {
			t.Fatalf("after %s: %d checks still counted on their way", what, c)
		}
	}
	if res, err := check(ctx, raw, "send_email", "same", false); err != nil || res.Approval == nil {
		t.Fatalf("pending: %v %+v", err, res.Outcome)
	}
	none("a pending item")
	if _, err := check(ctx, raw, "send_email", "same", false); err != nil {
		t.Fatal(err)
	}
	none("the same call again")
	if _, err := check(ctx, raw, "send_email", "", true); err != nil {
		t.Fatal(err)
	}
	none("a call that may join an earlier item")
	if _, err := check(ctx, raw, "no_such_tool", "", false); err == nil {
		t.Fatal("an unknown tool was checked")
	}
	none("an unknown tool")
	if _, err := check(ctx, "cs_"+strings.Repeat("x", 40), "send_email", "", false); err == nil {
		t.Fatal("an unknown key was accepted")
	}
	none("an unknown key")
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := check(gone, raw, "send_email", "", false); err == nil {
		t.Fatal("a check whose caller left was answered")
	}
	none("a caller gone")
	if res, err := check(ctx, raw, "search", "", false); err != nil || res.Outcome.Verdict != approval.Allow {
		t.Fatalf("allowed: %v %+v", err, res.Outcome)
	}
	none("an allowed call")

	// Reads wait while the tools are locked: a check of the asking tool is
	// counted meanwhile, one of the allowed tool is not.
	admin, err := f.store.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Rollback(ctx) }()
	if _, err := admin.Exec(ctx, `LOCK TABLE tools IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { _, err := check(ctx, raw, "search", "", false); done <- err }()
	waitFor(t, func() bool { // the allowed check waits for the tools
		var n int
		_ = f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&n)
		return n > 0
	})
	if c := f.store.Coming(); c != 0 {
		t.Fatalf("an allowed check counted on its way: %d", c)
	}
	go func() { _, err := check(ctx, raw, "send_email", "", false); done <- err }()
	waitFor(t, func() bool { return f.store.Coming() == 1 })
	if err := admin.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	none("checks that waited for the tools")
}
