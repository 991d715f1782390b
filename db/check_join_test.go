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

// joinFixture is one person's call guarded twice: Claude Code's hook (its
// session is the conversation) and `countersign mcp` in front of the MCP
// server (its own conversation and turn), each with a key the person made.
type joinFixture struct {
	*blockFixture
	hookKey, gwKey string
	hook, gw       db.CheckRequest
}

var joinOpt = db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2}

func newJoinFixture(t *testing.T) *joinFixture {
	t.Helper()
	f := &joinFixture{blockFixture: newBlockFixture(t)}
	f.hookKey, f.gwKey = f.personKey(t, "laptop hook", f.user), f.personKey(t, "laptop gateway", f.user)
	f.hook = db.CheckRequest{CallID: "toolu_01", User: f.user.Subject, ConversationID: "session-1", TurnID: "prompt-1",
		Connector: "mail", Tool: "send_email", Arguments: `{"to":"a@example.com","n":1}`, AttachToPending: true,
		Runtime: approval.Runtime{Client: "Claude Code"}}
	// The gateway sends the arguments as the MCP client wrote them: the
	// same object, another text.
	f.gw = db.CheckRequest{CallID: "toolu_01", User: f.user.Subject, ConversationID: "mcp/mail/0a1b2c", TurnID: "call/99/20261204",
		Connector: "mail", Tool: "send_email", Arguments: `{ "n": 1, "to": "a@example.com" }`, AttachToPending: true,
		Runtime: approval.Runtime{Client: "countersign mcp → mail-server 1.0"}}
	return f
}

// personKey is a new key made by u on the API keys screen.
func (f *joinFixture) personKey(t *testing.T, name string, u db.User) string {
	t.Helper()
	raw, _, err := f.store.CreateAPIKey(context.Background(), name, &u)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (f *joinFixture) check(t *testing.T, raw string, req db.CheckRequest) db.CheckResult {
	t.Helper()
	res, _, err := f.store.CheckWithAPIKey(context.Background(), raw, req, joinOpt)
	if err != nil {
		t.Fatalf("check %s: %v", req.ConversationID, err)
	}
	return res
}

// pendingItem is the first guard's item for req.
func (f *joinFixture) pendingItem(t *testing.T, raw string, req db.CheckRequest) db.Approval {
	t.Helper()
	res := f.check(t, raw, req)
	if res.Outcome.Verdict != approval.Pending || res.Approval == nil {
		t.Fatalf("first guard: %+v", res.Outcome)
	}
	return *res.Approval
}

func (f *joinFixture) approve(t *testing.T, id string) {
	t.Helper()
	if _, err := f.store.Answer(context.Background(), id, f.user, db.Answer{Decision: approval.Approve}); err != nil {
		t.Fatal(err)
	}
}

func (f *joinFixture) claim(t *testing.T, raw string, a db.Approval, req db.CheckRequest) (db.Approval, error) {
	t.Helper()
	return f.store.Claim(context.Background(), f.keyOf(t, raw), a.ID, req.CallID, approval.Digest(req.Arguments))
}

// approvedAndClaimed is the hook's item, approved by the person and used
// by the hook: what the gateway's check meets when Claude Code runs the
// MCP tool.
func (f *joinFixture) approvedAndClaimed(t *testing.T) db.Approval {
	t.Helper()
	a := f.pendingItem(t, f.hookKey, f.hook)
	f.approve(t, a.ID)
	if _, err := f.claim(t, f.hookKey, a, f.hook); err != nil {
		t.Fatal(err)
	}
	return a
}

func (f *joinFixture) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := f.store.Pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// asksAnew fails unless res is a new question: pending, another item than a.
func asksAnew(t *testing.T, what string, res db.CheckResult, a db.Approval) {
	t.Helper()
	if res.Outcome.Verdict != approval.Pending || res.Approval == nil || res.Approval.ID == a.ID {
		t.Fatalf("%s: %+v %+v, want a new item (not %s)", what, res.Outcome, res.Approval, a.ID)
	}
}

// Hook first (Claude Code): the person approves the hook's card, the hook
// uses the approval, Claude Code calls the MCP tool, and the gateway's
// check of the same call joins that item: allowed at once, once, with no
// second card, and the audit names both guards.
func TestSecondGuardJoinsTheApprovedCall(t *testing.T) {
	for _, sameKey := range []bool{false, true} {
		name := map[bool]string{false: "TwoKeysOfOnePerson", true: "OneKey"}[sameKey]
		t.Run(name, func(t *testing.T) {
			f := newJoinFixture(t)
			if sameKey {
				f.gwKey = f.hookKey
			}
			a := f.approvedAndClaimed(t)
			res := f.check(t, f.gwKey, f.gw)
			if res.Outcome.Verdict != approval.Allow || res.Outcome.Via != approval.ViaJoined || res.Approval == nil || res.Approval.ID != a.ID {
				t.Fatalf("the gateway's check of the approved call: %+v %+v", res.Outcome, res.Approval)
			}
			if n := f.count(t, `SELECT count(*) FROM approvals WHERE call_id = 'toolu_01'`); n != 1 {
				t.Fatalf("%d items for one call", n)
			}
			gw := f.keyOf(t, f.gwKey)
			for _, action := range []string{approval.ActionJoined, approval.ActionClaimed} {
				if n := f.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = $2 AND actor_id = $3
					AND conversation_id = $4 AND detail->>'runtime_client' = $5 AND detail->>'first_guard_client' = 'Claude Code'
					AND detail->>'second_guard' = 'true'`,
					a.ID, action, fmt.Sprint(gw.ID), f.gw.ConversationID, f.gw.Runtime.Client); n != 1 {
					t.Fatalf("%d %q lines naming the gateway", n, action)
				}
			}
			// The hook's own claim is there too: the audit names both guards.
			if n := f.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'claimed'`, a.ID); n != 2 {
				t.Fatalf("%d claim lines, want the hook's and the gateway's", n)
			}
			// Once: the gateway's same call sent again is a new question.
			asksAnew(t, "the gateway's call sent again", f.check(t, f.gwKey, f.gw), a)
		})
	}
}

// What never joins: each case asks the person anew (or is denied), and
// never runs on the first guard's approval.
func TestSecondGuardJoinRefused(t *testing.T) {
	ctx := context.Background()
	t.Run("DifferentDigest", func(t *testing.T) {
		// A replayed call id with other arguments rides nothing.
		f := newJoinFixture(t)
		a := f.approvedAndClaimed(t)
		f.gw.Arguments = `{"to":"attacker@example.com","n":1}`
		asksAnew(t, "other arguments", f.check(t, f.gwKey, f.gw), a)
	})
	t.Run("DifferentCallID", func(t *testing.T) {
		f := newJoinFixture(t)
		a := f.approvedAndClaimed(t)
		f.gw.CallID = "toolu_02"
		asksAnew(t, "another call id", f.check(t, f.gwKey, f.gw), a)
	})
	t.Run("DifferentTool", func(t *testing.T) {
		f := newJoinFixture(t)
		if err := f.store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail2", DisplayName: "Mail 2", Kind: "connector",
			Tools: []db.ToolSync{{Name: "send_email", DisplayName: "Send email"}}}); err != nil {
			t.Fatal(err)
		}
		a := f.approvedAndClaimed(t)
		f.gw.Connector = "mail2"
		asksAnew(t, "the same call id for another connector's tool", f.check(t, f.gwKey, f.gw), a)
	})
	t.Run("DifferentUser", func(t *testing.T) {
		f := newJoinFixture(t)
		other, err := f.store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: "other", Email: "o@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		a := f.approvedAndClaimed(t)
		f.gw.User = other.Subject
		asksAnew(t, "another person's call", f.check(t, f.gwKey, f.gw), a)
	})
	t.Run("KeyOfAnotherPerson", func(t *testing.T) {
		f := newJoinFixture(t)
		other, err := f.store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: "other", Email: "o@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		a := f.approvedAndClaimed(t)
		asksAnew(t, "a key someone else made", f.check(t, f.personKey(t, "theirs", other), f.gw), a)
	})
	t.Run("KeysMadeOnTheCommandLine", func(t *testing.T) {
		// Nobody made them: two such keys are two owners.
		f := newJoinFixture(t)
		f.hookKey = f.runtimeKey(t)
		a := f.approvedAndClaimed(t)
		asksAnew(t, "another key than a command-line key", f.check(t, f.runtimeKey(t), f.gw), a)
	})
	t.Run("NotAGuard", func(t *testing.T) {
		// A plain runtime's check (no attach_to_pending) never joins.
		f := newJoinFixture(t)
		a := f.approvedAndClaimed(t)
		f.gw.AttachToPending = false
		asksAnew(t, "a plain check", f.check(t, f.gwKey, f.gw), a)
	})
	t.Run("SecondJoin", func(t *testing.T) {
		// One joining guard per item: a third (another gateway) asks.
		f := newJoinFixture(t)
		a := f.approvedAndClaimed(t)
		if res := f.check(t, f.gwKey, f.gw); res.Outcome.Verdict != approval.Allow {
			t.Fatalf("the first join: %+v", res.Outcome)
		}
		third := f.gw
		third.ConversationID = "mcp/other/ffff"
		asksAnew(t, "a second join", f.check(t, f.personKey(t, "another gateway", f.user), third), a)
		asksAnew(t, "a second join with the same key", f.check(t, f.gwKey, third), a)
	})
	t.Run("SecondJoinWhilePending", func(t *testing.T) {
		// The gateway's item waits; the hook joined it; another guard of
		// the same person asks about the same call: it gets its own item,
		// and cannot read or claim the joined one.
		f := newJoinFixture(t)
		a := f.pendingItem(t, f.gwKey, f.gw)
		if res := f.check(t, f.hookKey, f.hook); res.Approval == nil || res.Approval.ID != a.ID {
			t.Fatalf("the first join: %+v", res.Approval)
		}
		third := f.hook
		third.ConversationID = "session-2"
		raw := f.personKey(t, "another hook", f.user)
		asksAnew(t, "a second join of a pending item", f.check(t, raw, third), a)
		asksAnew(t, "a second join with the joined key from another conversation", f.check(t, f.hookKey, third), a)
		f.approve(t, a.ID)
		if _, err := f.claim(t, raw, a, third); approval.KindOf(err) != approval.KindNotFound {
			t.Fatalf("a guard that did not join claimed the item: %v", err)
		}
	})
	t.Run("PastTheWindow", func(t *testing.T) {
		f := newJoinFixture(t)
		a := f.approvedAndClaimed(t)
		if _, err := f.store.Pool.Exec(ctx, `UPDATE approvals SET consumed_at = now() - $2::interval WHERE id = $1`, a.ID, db.JoinWindow+time.Second); err != nil {
			t.Fatal(err)
		}
		asksAnew(t, "a call id used long ago", f.check(t, f.gwKey, f.gw), a)
	})
	t.Run("Expired", func(t *testing.T) {
		f := newJoinFixture(t)
		a := f.pendingItem(t, f.hookKey, f.hook)
		if _, err := f.store.Pool.Exec(ctx, `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := f.store.ExpireIfDue(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		asksAnew(t, "an expired item's call", f.check(t, f.gwKey, f.gw), a)
	})
	t.Run("Rejected", func(t *testing.T) {
		// The person said no to this call: the other guard hears it too,
		// with their words, and nobody is asked again.
		f := newJoinFixture(t)
		a := f.pendingItem(t, f.hookKey, f.hook)
		if _, err := f.store.Answer(ctx, a.ID, f.user, db.Answer{Decision: approval.Reject, Reason: "not to them"}); err != nil {
			t.Fatal(err)
		}
		res := f.check(t, f.gwKey, f.gw)
		if res.Outcome.Verdict != approval.Deny || res.Outcome.Code != approval.CodeApprovalDenied || !strings.Contains(res.Message, "not to them") {
			t.Fatalf("the gateway's check of a rejected call: %+v %q", res.Outcome, res.Message)
		}
		if n := f.count(t, `SELECT count(*) FROM approvals WHERE call_id = 'toolu_01'`); n != 1 {
			t.Fatalf("%d items for one call", n)
		}
	})
	t.Run("BlockedSince", func(t *testing.T) {
		f := newJoinFixture(t)
		a := f.approvedAndClaimed(t)
		f.setMode(t, approval.ModeBlock)
		if res := f.check(t, f.gwKey, f.gw); res.Outcome.Verdict != approval.Deny || res.Outcome.Code != approval.CodeBlockedByPolicy {
			t.Fatalf("a blocked tool's joined call: %+v (item %s)", res.Outcome, a.ID)
		}
	})
}

// Gateway first (a client whose second guard asks later, such as a bridge
// and a hook): the second guard's check joins the pending item and waits on
// it; once approved, each guard claims it once, whichever claims first.
func TestSecondGuardWaitsOnThePendingItem(t *testing.T) {
	ctx := context.Background()
	for _, gatewayClaimsFirst := range []bool{true, false} {
		name := map[bool]string{true: "FirstGuardClaimsFirst", false: "SecondGuardClaimsFirst"}[gatewayClaimsFirst]
		t.Run(name, func(t *testing.T) {
			f := newJoinFixture(t)
			a := f.pendingItem(t, f.gwKey, f.gw)
			res := f.check(t, f.hookKey, f.hook)
			if res.Outcome.Verdict != approval.Pending || res.Approval == nil || res.Approval.ID != a.ID {
				t.Fatalf("the hook's check of the pending call: %+v %+v", res.Outcome, res.Approval)
			}
			// Sent again (a lost answer), the same guard gets the same item.
			if again := f.check(t, f.hookKey, f.hook); again.Approval == nil || again.Approval.ID != a.ID {
				t.Fatalf("the hook's check sent again: %+v", again.Approval)
			}
			hook := f.keyOf(t, f.hookKey)
			if got, err := f.store.ApprovalForKey(ctx, a.ID, hook); err != nil || got.Status != approval.StatusPending {
				t.Fatalf("the joined guard cannot follow the item: %+v %v", got.Status, err)
			}
			if _, err := f.store.ApprovalForKey(ctx, a.ID, f.keyOf(t, f.personKey(t, "unrelated", f.user))); approval.KindOf(err) != approval.KindNotFound {
				t.Fatalf("a key that did not join reads the item: %v", err)
			}
			if _, err := f.claim(t, f.hookKey, a, f.hook); approval.KindOf(err) != approval.KindConflict {
				t.Fatalf("the joined guard claimed a pending item: %v", err)
			}
			f.approve(t, a.ID)
			first, second := f.gwKey, f.hookKey
			firstReq, secondReq := f.gw, f.hook
			if !gatewayClaimsFirst {
				first, second, firstReq, secondReq = second, first, secondReq, firstReq
			}
			if _, err := f.claim(t, first, a, firstReq); err != nil {
				t.Fatalf("first claim: %v", err)
			}
			if got, err := f.store.ApprovalForKey(ctx, a.ID, f.keyOf(t, second)); err != nil || got.Status != approval.StatusApproved {
				t.Fatalf("the second claimer sees %v %v, want approved (its use is still to come)", got.Status, err)
			}
			wrong := secondReq
			wrong.Arguments = `{"to":"attacker@example.com","n":1}`
			if _, err := f.claim(t, second, a, wrong); approval.KindOf(err) != approval.KindConflict {
				t.Fatalf("a claim with other arguments: %v", err)
			}
			got, err := f.claim(t, second, a, secondReq)
			if err != nil || got.Status != approval.StatusConsumed || got.CallID != "toolu_01" {
				t.Fatalf("second claim: %+v %v", got.Status, err)
			}
			for _, raw := range []string{first, second} {
				if _, err := f.claim(t, raw, a, f.hook); approval.KindOf(err) != approval.KindConflict {
					t.Fatalf("a third claim: %v", err)
				}
			}
			if n := f.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'claimed'`, a.ID); n != 2 {
				t.Fatalf("%d claim lines", n)
			}
			if n := f.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = $2 AND actor_id = $3
				AND detail->>'runtime_client' = 'Claude Code'`, a.ID, approval.ActionJoined, fmt.Sprint(hook.ID)); n != 1 {
				t.Fatalf("%d join lines naming the hook", n)
			}
		})
	}
	t.Run("Rejected", func(t *testing.T) {
		f := newJoinFixture(t)
		a := f.pendingItem(t, f.gwKey, f.gw)
		if res := f.check(t, f.hookKey, f.hook); res.Approval == nil || res.Approval.ID != a.ID {
			t.Fatalf("join: %+v", res.Approval)
		}
		if _, err := f.store.Answer(ctx, a.ID, f.user, db.Answer{Decision: approval.Reject}); err != nil {
			t.Fatal(err)
		}
		if got, err := f.store.ApprovalForKey(ctx, a.ID, f.keyOf(t, f.hookKey)); err != nil || got.Status != approval.StatusRejected {
			t.Fatalf("the waiting guard sees %v %v", got.Status, err)
		}
		if _, err := f.claim(t, f.hookKey, a, f.hook); approval.KindOf(err) != approval.KindConflict {
			t.Fatalf("a claim of a rejected item: %v", err)
		}
	})
}

// The hook answered "still waiting" and the model made the call again
// with a new id; the hook's check attached it to the same item, which the
// person then approved. The agent runs the tool under the new id, and the
// gateway's check with that id joins the item. An id nobody attached does
// not.
func TestSecondGuardJoinsUnderTheRetriedCallID(t *testing.T) {
	f := newJoinFixture(t)
	a := f.pendingItem(t, f.hookKey, f.hook)
	retry := f.hook
	retry.CallID, retry.TurnID = "toolu_02", "prompt-2"
	res := f.check(t, f.hookKey, retry)
	if res.Approval == nil || res.Approval.ID != a.ID {
		t.Fatalf("the hook's retry did not attach: %+v", res.Approval)
	}
	f.approve(t, a.ID)
	if _, err := f.claim(t, f.hookKey, a, f.hook); err != nil {
		t.Fatal(err)
	}
	stranger := f.gw
	stranger.CallID = "toolu_03"
	asksAnew(t, "a call id nobody attached", f.check(t, f.gwKey, stranger), a)
	f.gw.CallID = "toolu_02"
	res = f.check(t, f.gwKey, f.gw)
	if res.Outcome.Verdict != approval.Allow || res.Outcome.Via != approval.ViaJoined || res.Approval == nil || res.Approval.ID != a.ID {
		t.Fatalf("the gateway under the retried call id: %+v %+v", res.Outcome, res.Approval)
	}
	if n := f.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'claimed'
		AND detail->>'call_id' = 'toolu_02' AND detail->>'item_call_id' = 'toolu_01'`, a.ID); n != 1 {
		t.Fatalf("%d claim lines naming both call ids", n)
	}
}
