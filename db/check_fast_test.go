package db_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

// An allowed-by-policy check takes no lock on the tool's row (no
// transaction id lands in the row's xmax) and writes one audit line per
// call, naming the call's owner, in the statement that read the tool.
func TestAllowedByPolicyTakesNoLock(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	f.setMode(t, approval.ModeAllow)
	state := func() (xmax string, events int64) {
		t.Helper()
		if err := f.store.Pool.QueryRow(ctx, `SELECT xmax::text, (SELECT count(*) FROM audit_events) FROM tools WHERE id = $1`,
			f.tool.ID).Scan(&xmax, &events); err != nil {
			t.Fatal(err)
		}
		return xmax, events
	}
	x0, e0 := state()
	for i := 0; i < 3; i++ {
		res, err := f.store.Check(ctx, f.key, db.CheckRequest{CallID: "c", User: f.user.Subject, ConversationID: "conv",
			TurnID: "t", Connector: "mail", Tool: "send_email", Arguments: `{}`}, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
		if err != nil || res.Outcome != (approval.Outcome{Verdict: approval.Allow, Via: approval.ViaPolicy}) || res.Tool.ID != f.tool.ID {
			t.Fatalf("check: %+v %v", res.Outcome, err)
		}
	}
	if x1, e1 := state(); x1 != x0 || e1 != e0+3 {
		t.Fatalf("the tool's row was locked or the calls were not audited once each: xmax %s → %s, events %d → %d", x0, x1, e0, e1)
	}
	var n int
	if err := f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = $1 AND owner_subject = $2
		AND actor_kind = 'api_key' AND detail->>'rule' = 'allow' AND detail->>'call_id' = 'c'`,
		approval.ActionAllowedByPolicy, f.user.Subject).Scan(&n); err != nil || n != 3 {
		t.Fatalf("allowed-by-policy lines with the owner: %d %v", n, err)
	}
}

// A call sent again while its item is pending gets the item, even after the
// policy changed to allow: the policy-only answer does not skip that rule.
func TestAllowedByPolicyKeepsPendingItem(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	a, req := f.pending(t, "turn")
	f.setMode(t, approval.ModeAllow)
	res, err := f.store.Check(ctx, f.key, req, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
	if err != nil || res.Outcome.Verdict != approval.Pending || res.Approval == nil || res.Approval.ID != a.ID {
		t.Fatalf("resent call: %+v %v", res.Outcome, err)
	}
	req.CallID = "another"
	if res, err := f.store.Check(ctx, f.key, req, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2}); err != nil ||
		res.Outcome.Verdict != approval.Allow {
		t.Fatalf("new call: %+v %v", res.Outcome, err)
	}
}

// Calls allowed by one "Always allow" grant do not queue on shared rows:
// the tool's row is not locked, and the grant's last use is written at
// first and then at most once a minute, so a second use within the minute
// leaves its row as it was. Each use is still audited.
func TestGrantUseLocksNoSharedRow(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	a, _ := f.pending(t, "turn-0")
	if _, err := f.store.Decide(ctx, a.ID, f.user, approval.AlwaysAllow, ""); err != nil {
		t.Fatal(err)
	}
	use := func(n string) {
		t.Helper()
		res, err := f.store.Check(ctx, f.key, db.CheckRequest{CallID: n, User: f.user.Subject, ConversationID: "conv",
			TurnID: n, Connector: "mail", Tool: "send_email", Arguments: `{}`}, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
		if err != nil || res.Outcome != (approval.Outcome{Verdict: approval.Allow, Via: approval.ViaAlwaysAllow}) {
			t.Fatalf("check: %+v %v", res.Outcome, err)
		}
	}
	state := func() (s string) {
		t.Helper()
		if err := f.store.Pool.QueryRow(ctx, `SELECT (SELECT xmax::text FROM tools WHERE id = $1) || '/' ||
			(SELECT xmin::text FROM standing_grants WHERE tool_id = $1) || '/' ||
			(SELECT count(*) FROM audit_events WHERE action = $2)`, f.tool.ID, approval.ActionAutoApprovedAlways).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	use("first")
	s1 := state()
	use("second")
	s2 := state()
	if s1[:strings.LastIndex(s1, "/")] != s2[:strings.LastIndex(s2, "/")] {
		t.Fatalf("the second use wrote to the tool's or the grant's row (tool xmax/grant xmin/audited): %s → %s", s1, s2)
	}
	if !strings.HasSuffix(s1, "/1") || !strings.HasSuffix(s2, "/2") {
		t.Fatalf("each use is audited: %s → %s", s1, s2)
	}
	// The first use was noted, and a use a minute later is noted again.
	lastUsed := func() (at *time.Time) {
		t.Helper()
		if err := f.store.Pool.QueryRow(ctx, `SELECT last_used_at FROM standing_grants WHERE approval_id::text = $1`, a.ID).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	first := lastUsed()
	if first == nil {
		t.Fatal("the first use was not noted")
	}
	if _, err := f.store.Pool.Exec(ctx, `UPDATE standing_grants SET last_used_at = last_used_at - interval '2 minutes' WHERE approval_id::text = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	use("a minute later")
	if later := lastUsed(); later == nil || !later.After(*first) {
		t.Fatalf("a use a minute later was not noted: %v, then %v", first, later)
	}
}

// A pending item's writes go in one batch held to the policy the check
// read: when the policy changed since, the batch fails as a whole — no item,
// no full text, no audit event, no outbox event — and the check reads again.
func TestPendingBatchHeldToPolicyRead(t *testing.T) {
	for name, open := range map[string]openPending{"OneBatch": (*db.DB).OpenPendingUnder, "Grouped": (*db.DB).OpenPendingGroupedUnder} {
		t.Run(name, func(t *testing.T) { pendingHeldToPolicyRead(t, open) })
	}
}

// openPending writes a pending outcome for a tool as the caller read it.
type openPending func(d *db.DB, ctx context.Context, key db.APIKey, req db.CheckRequest, tool db.Tool) (db.CheckResult, error)

func pendingHeldToPolicyRead(t *testing.T, open openPending) {
	f := newBlockFixture(t)
	ctx := context.Background()
	stale := f.tool
	f.setMode(t, approval.ModeAllow)
	f.setMode(t, approval.ModeRequireApproval)
	if f.tool.PolicyVersion == stale.PolicyVersion {
		t.Fatal("the policy version did not move")
	}
	req := db.CheckRequest{CallID: "c1", User: f.user.Subject, ConversationID: "conv", TurnID: "t",
		Connector: "mail", Tool: "send_email", Arguments: `{"to":"a@example.com"}`}
	written := func() (s string) {
		t.Helper()
		if err := f.store.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM approvals) || '/' || (SELECT count(*) FROM approval_arguments)
			|| '/' || (SELECT count(*) FROM audit_events WHERE action = $1) || '/' || (SELECT count(*) FROM notification_events WHERE kind = $2)`,
			approval.ActionRequested, db.EventApprovalRequested).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := open(f.store, ctx, f.key, req, stale); !errors.Is(err, db.ErrToolChanged) {
		t.Fatalf("stale policy: %v", err)
	}
	if got := written(); got != "0/0/0/0" {
		t.Fatalf("a failed batch left rows behind (items/full texts/audited/outbox): %s", got)
	}
	res, err := open(f.store, ctx, f.key, req, f.tool)
	if err != nil || res.Approval == nil || res.Approval.Status != approval.StatusPending || res.Approval.CallID != "c1" {
		t.Fatalf("current policy: %+v %v", res.Approval, err)
	}
	if got := written(); got != "1/1/1/1" {
		t.Fatalf("items/full texts/audited/outbox: %s", got)
	}
	// A retired tool refuses the same way.
	if err := f.store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: []db.ToolSync{{Name: "other", DisplayName: "Other"}}}); err != nil {
		t.Fatal(err)
	}
	req.CallID = "c2"
	if _, err := open(f.store, ctx, f.key, req, f.tool); !errors.Is(err, db.ErrToolChanged) {
		t.Fatalf("retired tool: %v", err)
	}
}

// Every outcome of a check outside a run is recorded: a refusal is audited
// once, a repeated rejection is refused and audited, and the same call sent
// again while pending gets its item.
func TestCheckOutcomesAudited(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	opt := db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 1}
	audited := func(action string) (n int) {
		t.Helper()
		if err := f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = $1`, action).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, req := f.pending(t, "turn")
	again, err := f.store.Check(ctx, f.key, req, opt)
	if err != nil || again.Approval == nil || again.Approval.ID != a.ID {
		t.Fatalf("resent: %+v %v", again.Approval, err)
	}
	if _, err := f.store.Decide(ctx, a.ID, f.user, approval.Reject, "no"); err != nil {
		t.Fatal(err)
	}
	req.CallID = "retry"
	res, err := f.store.Check(ctx, f.key, req, opt)
	if err != nil || res.Outcome.Code != approval.CodeDeniedRepeated || res.Message == "" || audited(approval.ActionBlockedRepeated) != 1 {
		t.Fatalf("repeated: %+v %q %v", res.Outcome, res.Message, err)
	}
	f.setMode(t, approval.ModeBlock)
	req.CallID = "blocked"
	res, err = f.store.Check(ctx, f.key, req, opt)
	if err != nil || res.Outcome.Code != approval.CodeBlockedByPolicy || res.Message == "" || audited(approval.ActionBlockedByPolicy) != 1 {
		t.Fatalf("blocked: %+v %q %v", res.Outcome, res.Message, err)
	}
}

// lockWaiters waits until n backends wait on a lock (the checks blocked on
// the tool's row), so that the blocking transaction ends after they
// arrived.
func lockWaiters(t *testing.T, f *blockFixture, n int) {
	t.Helper()
	for range 500 {
		var got int
		if err := f.store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d checks never waited on the tool's row", n)
}

// Two identical checks that may join an earlier item race in the
// transactional path: the loser's insert hits the pending call's unique
// index, and it retries and gets the winner's item.
func TestRacingJoinsRetry(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	tx := f.lockTool(t)
	req := db.CheckRequest{CallID: "same", User: f.user.Subject, ConversationID: "conv", TurnID: "t",
		Connector: "mail", Tool: "send_email", Arguments: `{"a":1}`, AttachToPending: true}
	var wg sync.WaitGroup
	errs, ids := make([]error, 2), make([]string, 2)
	for i := range 2 {
		wg.Go(func() {
			res, err := f.store.Check(ctx, f.key, req, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
			errs[i] = err
			if res.Approval != nil {
				ids[i] = res.Approval.ID
			}
		})
	}
	lockWaiters(t, f, 2)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || ids[0] == "" || ids[0] != ids[1] {
		t.Fatalf("racing identical calls: errs %v, items %v", errs, ids)
	}
}

// A policy change that commits while a check waits on the tool's row makes
// the check read the policy again, not fail.
func TestPolicyChangeDuringCheckRetries(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	for _, attach := range []bool{false, true} {
		tx, err := f.store.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `UPDATE tools SET policy_version = policy_version + 1 WHERE id = $1`, f.tool.ID); err != nil {
			t.Fatal(err)
		}
		req := db.CheckRequest{CallID: fmt.Sprint("c-", attach), User: f.user.Subject, ConversationID: "conv", TurnID: "t",
			Connector: "mail", Tool: "send_email", Arguments: fmt.Sprintf(`{"attach":%v}`, attach), AttachToPending: attach}
		done := make(chan db.CheckResult, 1)
		errc := make(chan error, 1)
		go func() {
			res, err := f.store.Check(ctx, f.key, req, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
			done <- res
			errc <- err
		}()
		lockWaiters(t, f, 1)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := <-done, <-errc
		if err != nil || res.Approval == nil {
			t.Fatalf("attach %v: a check racing a policy change: %+v %v", attach, res.Outcome, err)
		}
		if want := f.tool.PolicyVersion + 1; res.Approval.PolicyVersion != want {
			t.Fatalf("attach %v: the item holds policy version %d, want the new %d", attach, res.Approval.PolicyVersion, want)
		}
		f.tool.PolicyVersion++
	}
}

// Checks allowed by a grant at the same moment are audited together: every
// check answered "allow" has its one audit line, and a group whose write
// fails fails every check in it — none of them is allowed without its line.
func TestGroupedAuditLines(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	a, _ := f.pending(t, "turn-0")
	if _, err := f.store.Decide(ctx, a.ID, f.user, approval.AlwaysAllow, ""); err != nil {
		t.Fatal(err)
	}
	f.refusePoisonLines(t) // lines of a "poison" turn cannot be stored
	const n = 48
	allowed := make([]bool, n)
	failed := make([]bool, n)
	turn := func(i int) string {
		if i%6 == 5 {
			return fmt.Sprint("poison-", i)
		}
		return fmt.Sprint("ok-", i)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := f.store.Check(ctx, f.key, db.CheckRequest{CallID: fmt.Sprint("c", i), User: f.user.Subject,
				ConversationID: "conv", TurnID: turn(i), Connector: "mail", Tool: "send_email", Arguments: `{}`},
				db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
			failed[i] = err != nil
			allowed[i] = err == nil && res.Outcome == (approval.Outcome{Verdict: approval.Allow, Via: approval.ViaAlwaysAllow})
		})
	}
	wg.Wait()
	okAllowed := 0
	for i := range n {
		var lines int
		if err := f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE turn_id = $1 AND action = $2`,
			turn(i), approval.ActionAutoApprovedAlways).Scan(&lines); err != nil {
			t.Fatal(err)
		}
		switch {
		case allowed[i] && lines != 1:
			t.Fatalf("check %d was allowed with %d audit lines", i, lines)
		case !allowed[i] && lines != 0:
			t.Fatalf("check %d was not allowed but audited %d times", i, lines)
		case !allowed[i] && !failed[i]:
			t.Fatalf("check %d neither allowed nor failed", i)
		case strings.HasPrefix(turn(i), "poison") && allowed[i]:
			t.Fatalf("check %d was allowed though its line was refused", i)
		case allowed[i]:
			okAllowed++
		}
	}
	if okAllowed == 0 {
		t.Fatal("no check was allowed")
	}
}
