package db_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

// An allowed-by-policy check writes nothing: it takes no lock on the tool's
// row (no transaction id lands in the row's xmax) and audits nothing.
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
	if x1, e1 := state(); x1 != x0 || e1 != e0 {
		t.Fatalf("the tool's row was locked or something was audited: xmax %s → %s, events %d → %d", x0, x1, e0, e1)
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

// A call sent again after its item was approved but before it was used —
// a runtime whose first answer was lost — gets that item, approved, and
// claims it: no second prompt. Once used, the same call is a new call.
func TestSameCallAfterApprovalGetsTheItem(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	opt := db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2}
	a, req := f.pending(t, "turn")
	if _, err := f.store.Decide(ctx, a.ID, f.user, approval.Approve, ""); err != nil {
		t.Fatal(err)
	}
	res, err := f.store.Check(ctx, f.key, req, opt)
	if err != nil || res.Outcome.Verdict != approval.Pending || res.Approval == nil || res.Approval.ID != a.ID ||
		res.Approval.Status != approval.StatusApproved {
		t.Fatalf("the same call after approval: %+v %+v %v", res.Outcome, res.Approval, err)
	}
	// Another key sending the same fields does not get it.
	_, other, err := f.store.CreateAPIKey(ctx, "other", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := f.store.Check(ctx, other, req, opt); err != nil || res.Approval == nil || res.Approval.ID == a.ID {
		t.Fatalf("another key got this key's approved item: %+v %v", res.Approval, err)
	}
	if _, err := f.store.Claim(ctx, f.key, a.ID, req.CallID, approval.Digest(req.Arguments)); err != nil {
		t.Fatal(err)
	}
	res, err = f.store.Check(ctx, f.key, req, opt)
	if err != nil || res.Approval == nil || res.Approval.ID == a.ID || res.Approval.Status != approval.StatusPending {
		t.Fatalf("the same call after its approval was used: %+v %v", res.Approval, err)
	}
}

// A call sent again after its item ended without running — rejected,
// expired or cancelled, while the runtime's first answer was lost — is
// denied with that item's end, the reviewer's reason included, whichever
// way the check reads the turn's facts: the person is not asked twice about
// one call. A new call id with the same arguments still asks, and another
// key's same fields are its own call.
func TestSameCallAfterItsEndGetsTheEnd(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	raw := f.runtimeKey(t)
	opt := db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2}
	ends := []struct {
		name string
		code approval.ReasonCode
		end  func(t *testing.T, a db.Approval, req db.CheckRequest)
	}{
		{"rejected", approval.CodeApprovalDenied, func(t *testing.T, a db.Approval, _ db.CheckRequest) {
			if _, err := f.store.Answer(ctx, a.ID, f.user, db.Answer{Decision: approval.Reject, Reason: "wrong\u202erecipient"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"expired", approval.CodeApprovalTimeout, func(t *testing.T, a db.Approval, _ db.CheckRequest) {
			if _, err := f.store.Pool.Exec(ctx, `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, a.ID); err != nil {
				t.Fatal(err)
			}
			if err := f.store.ExpireIfDue(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{"cancelled", approval.CodeApprovalCancelled, func(t *testing.T, a db.Approval, req db.CheckRequest) {
			if n, err := f.store.CancelTurn(ctx, f.keyOf(t, raw), req.User, req.ConversationID, req.TurnID); err != nil || n != 1 {
				t.Fatalf("cancel turn: %d %v", n, err)
			}
		}},
	}
	for i, e := range ends {
		t.Run(e.name, func(t *testing.T) {
			req := db.CheckRequest{CallID: fmt.Sprint("end-", i), TurnID: "turn-" + e.name, Tool: "send_email", Arguments: fmt.Sprintf(`{"end":%d}`, i)}
			first, err := f.keyCheck(ctx, raw, req)
			if err != nil || first.Approval == nil || first.Outcome.Verdict != approval.Pending {
				t.Fatalf("first check: %+v %v", first.Outcome, err)
			}
			a := *first.Approval
			full := req
			full.User, full.ConversationID, full.Connector = f.user.Subject, "conv", "mail"
			e.end(t, a, full)
			key := f.keyOf(t, raw)
			attached := req
			attached.AttachToPending = true
			for _, again := range []struct {
				how   string
				check func() (db.CheckResult, error)
			}{
				{"with the key, facts in the first statement", func() (db.CheckResult, error) { return f.keyCheck(ctx, raw, req) }},
				{"with the key, asking to attach", func() (db.CheckResult, error) { return f.keyCheck(ctx, raw, attached) }},
				{"facts read apart", func() (db.CheckResult, error) { return f.store.Check(ctx, key, full, opt) }},
			} {
				res, err := again.check()
				if err != nil || res.Outcome.Verdict != approval.Deny || res.Outcome.Code != e.code || res.Approval == nil || res.Approval.ID != a.ID {
					t.Fatalf("%s: the same call after its item %s: %+v %+v %v", again.how, e.name, res.Outcome, res.Approval, err)
				}
				if e.name == "rejected" && !strings.Contains(res.Message, "wrong\u202erecipient") {
					t.Fatalf("%s: the reviewer's reason is not in the message: %q", again.how, res.Message)
				}
			}
			var items int
			if err := f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM approvals WHERE call_id = $1`, req.CallID).Scan(&items); err != nil || items != 1 {
				t.Fatalf("the same call sent again opened items: %d %v", items, err)
			}
			other := req
			other.CallID += "-new"
			if res, err := f.keyCheck(ctx, raw, other); err != nil || res.Outcome.Verdict != approval.Pending || res.Approval == nil || res.Approval.ID == a.ID {
				t.Fatalf("a new call with the same arguments: %+v %+v %v", res.Outcome, res.Approval, err)
			}
			if res, err := f.keyCheck(ctx, f.runtimeKey(t), req); err != nil || res.Outcome.Verdict != approval.Pending || res.Approval == nil || res.Approval.ID == a.ID {
				t.Fatalf("another key's same call: %+v %+v %v", res.Outcome, res.Approval, err)
			}
		})
	}
}

// The tool a runtime's check reads with its key (one statement, scanned
// column by column) is the tool as every other reader reads it, hints,
// grant cap and all.
func TestCheckWithKeyReadsTheWholeTool(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	yes, no := true, false
	if err := f.store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: []db.ToolSync{{Name: "send_email", DisplayName: "Send email", Description: "Sends one email.",
			Annotations: approval.Annotations{ReadOnlyHint: &no, DestructiveHint: &yes, OpenWorldHint: &yes}}}}); err != nil {
		t.Fatal(err)
	}
	tool, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email",
		approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true, MaxGrant: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	raw, _, err := f.store.CreateAPIKey(ctx, "second", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := f.store.CheckWithAPIKey(ctx, raw, db.CheckRequest{CallID: "c", User: f.user.Subject, ConversationID: "conv",
		TurnID: "t", Connector: "mail", Tool: "send_email", Arguments: `{}`}, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.store.ToolByID(ctx, tool.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Tool, want) {
		t.Fatalf("the check read\n%+v\nother readers read\n%+v", res.Tool, want)
	}
	if want.MaxGrantSeconds == nil || want.DestructiveHint == nil || !*want.DestructiveHint || want.Description == "" {
		t.Fatalf("the fixture did not set what the test compares: %+v", want)
	}
}

// The turn's facts that a runtime's check reads in its one statement lead
// to what they led to when read on their own: the third rejection of the
// same arguments in a turn is refused without asking, the same call after
// its approval gets its approved item, and an "Always allow" grant allows.
func TestCheckWithKeyReadsTheTurnsFacts(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	raw := f.runtimeKey(t)
	check := func(call, turn, args string) db.CheckResult {
		t.Helper()
		res, err := f.keyCheck(ctx, raw, db.CheckRequest{CallID: call, TurnID: turn, Tool: "send_email", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i := range 2 {
		res := check(fmt.Sprint("r", i), "rejecting", `{"to":"x@example.com"}`)
		if res.Approval == nil {
			t.Fatalf("check %d: %+v", i, res.Outcome)
		}
		if _, err := f.store.Decide(ctx, res.Approval.ID, f.user, approval.Reject, "no"); err != nil {
			t.Fatal(err)
		}
	}
	if res := check("r2", "rejecting", `{"to":"x@example.com"}`); res.Outcome.Verdict != approval.Deny ||
		res.Outcome.Code != approval.CodeDeniedRepeated {
		t.Fatalf("after two rejections in the turn: %+v", res.Outcome)
	}
	first := check("same", "approving", `{"n":1}`)
	if _, err := f.store.Decide(ctx, first.Approval.ID, f.user, approval.Approve, ""); err != nil {
		t.Fatal(err)
	}
	if res := check("same", "approving", `{"n":1}`); res.Approval == nil || res.Approval.ID != first.Approval.ID ||
		res.Approval.Status != approval.StatusApproved {
		t.Fatalf("the same call after its approval: %+v %+v", res.Outcome, res.Approval)
	}
	granting := check("g", "granting", `{"n":2}`)
	if _, err := f.store.Decide(ctx, granting.Approval.ID, f.user, approval.AlwaysAllow, ""); err != nil {
		t.Fatal(err)
	}
	if res := check("g2", "another turn", `{"n":3}`); res.Outcome != (approval.Outcome{Verdict: approval.Allow, Via: approval.ViaAlwaysAllow}) {
		t.Fatalf("under an always-allow grant: %+v", res.Outcome)
	}
}

// The first statement reads the turn's facts only for a tool that asked a
// person when last read. Whichever statement ran, a tool whose policy
// changed since is decided on all its facts: rejections in the turn still
// block it after the policy went to allow and back.
func TestCheckStatementFollowsThePolicy(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	raw := f.runtimeKey(t)
	n := 0
	check := func(tool string) db.CheckResult {
		t.Helper()
		n++
		res, err := f.keyCheck(ctx, raw, db.CheckRequest{CallID: fmt.Sprint("c", n), TurnID: "turn", Tool: tool,
			Arguments: `{"to":"x@example.com"}`})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := func(want bool) {
		t.Helper()
		if got := f.store.ReadsFactsFirst("mail", "send_email"); got != want {
			t.Fatalf("reads the facts first: %v, want %v", got, want)
		}
	}
	apart := f.store.FactsReadApart()
	readApart := func(want int64) {
		t.Helper()
		got := f.store.FactsReadApart() - apart
		if got != want {
			t.Fatalf("checks that read the facts apart: %d, want %d", got, want)
		}
		apart += got
	}
	first(false)
	for i := range 2 {
		res := check("send_email")
		if res.Approval == nil {
			t.Fatalf("asking tool: %+v", res.Outcome)
		}
		readApart(int64(1 - i)) // the first check learns that the tool asks
		first(true)
		if _, err := f.store.Decide(ctx, res.Approval.ID, f.user, approval.Reject, "no"); err != nil {
			t.Fatal(err)
		}
	}
	f.setMode(t, approval.ModeAllow)
	if res := check("send_email"); res.Outcome.Verdict != approval.Allow {
		t.Fatalf("allowed tool read with the facts: %+v", res.Outcome)
	}
	first(false)
	if res := check("send_email"); res.Outcome.Verdict != approval.Allow {
		t.Fatalf("allowed tool: %+v", res.Outcome)
	}
	readApart(0)
	f.setMode(t, approval.ModeRequireApproval)
	for i := range 2 {
		if res := check("send_email"); res.Outcome.Verdict != approval.Deny || res.Outcome.Code != approval.CodeDeniedRepeated {
			t.Fatalf("check %d after the policy asks again, two rejections in the turn: %+v", i, res.Outcome)
		}
		readApart(int64(1 - i))
		first(true)
	}
	f.setMode(t, approval.ModeBlock)
	if res := check("send_email"); res.Outcome.Verdict != approval.Deny {
		t.Fatalf("blocked tool: %+v", res.Outcome)
	}
	first(false)
	if _, err := f.keyCheck(ctx, raw, db.CheckRequest{CallID: "u", TurnID: "turn", Tool: "no_such_tool", Arguments: `{}`}); err == nil {
		t.Fatal("an unknown tool was checked")
	}
	if f.store.ReadsFactsFirst("mail", "no_such_tool") {
		t.Fatal("an unknown tool is remembered")
	}
}
