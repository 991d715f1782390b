package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

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
