package db_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

// orgFixture is an organisation: Maya (finance and platform), Finn and
// Fiona (finance), Sam (platform), a key of Maya's agent and a platform
// service agent's key, and payments.send whose rule is two of finance
// when args.amount > 10000.
type orgFixture struct {
	store                  *db.DB
	maya, finn, fiona, sam db.User
	mayaKey, platformKey   db.APIKey
	n                      int
}

func newOrgFixture(t *testing.T) *orgFixture {
	t.Helper()
	ctx := context.Background()
	store, _ := testenv.OpenDB(t)
	f := &orgFixture{store: store}
	sign := func(sub, name string, groups ...string) db.User {
		u, err := store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: sub, Name: name, Email: sub + "@example.com",
			EmailVerified: true, Groups: groups})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	f.maya, f.finn = sign("maya", "Maya", "finance", "platform"), sign("finn", "Finn", "finance")
	f.fiona, f.sam = sign("fiona", "Fiona", "finance"), sign("sam", "Sam", "platform")
	err := store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "payments", DisplayName: "Payments", Kind: "connector",
		Tools: []db.ToolSync{{Name: "send", DisplayName: "Send payment"}, {Name: "deploy", DisplayName: "Deploy"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetToolPolicy(ctx, approval.SystemActor, "payments", "send", approval.Policy{Mode: approval.ModeRequireApproval,
		StandingApproval: true, Rule: approval.DeciderRule{Deciders: approval.DecidersQuorum, Team: "finance", Quorum: 2},
		DecidersCondition: "args.amount > 10000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetToolPolicy(ctx, approval.SystemActor, "payments", "deploy", approval.Policy{Mode: approval.ModeRequireApproval,
		StandingApproval: true}); err != nil {
		t.Fatal(err)
	}
	if _, f.mayaKey, err = store.CreateAPIKey(ctx, "maya's agent", nil); err != nil {
		t.Fatal(err)
	}
	if _, f.platformKey, err = store.CreateAPIKeyWith(ctx, "deploy bot", nil, db.APIKeyOptions{Team: "platform"}); err != nil {
		t.Fatal(err)
	}
	return f
}

var orgCheck = db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2, Condition: approval.EvaluateCondition}

// ask runs a check of payments.<tool> with args by key for user.
func (f *orgFixture) ask(t *testing.T, key db.APIKey, user, tool, args string) db.CheckResult {
	t.Helper()
	f.n++
	res, err := f.store.Check(context.Background(), key, db.CheckRequest{CallID: fmt.Sprint("call-", f.n), User: user,
		ConversationID: "conv", TurnID: "turn", Connector: "payments", Tool: tool, Arguments: args}, orgCheck)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f *orgFixture) bigPayment(t *testing.T) db.Approval {
	t.Helper()
	res := f.ask(t, f.mayaKey, f.maya.Subject, "send", fmt.Sprintf(`{"amount": 25000, "n": %d}`, f.n))
	if res.Approval == nil {
		t.Fatalf("a big payment did not wait: %+v", res.Outcome)
	}
	return *res.Approval
}

// TestQuorumTwoOfFinance: the acceptance flow of a two-person rule.
func TestQuorumTwoOfFinance(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)

	t.Run("RuleChosenByCondition", func(t *testing.T) {
		small := f.ask(t, f.mayaKey, f.maya.Subject, "send", `{"amount": 50}`)
		if small.Approval == nil || small.Approval.Rule().Needed() != 1 || small.Approval.Deciders != "owner" {
			t.Fatalf("a small payment: %+v", small.Approval)
		}
		if got := small.Approval.AvailableDecisions; len(got) < 3 {
			t.Errorf("a small payment (owner decides) offers %v, want standing answers too", got)
		}
		big := f.bigPayment(t)
		if big.Deciders != "quorum" || big.DeciderTeam != "finance" || big.Quorum != 2 {
			t.Fatalf("a big payment's rule: %+v", big.Rule())
		}
		if got := big.AvailableDecisions; len(got) != 2 || got[0] != "approve" || got[1] != "reject" {
			t.Errorf("a quorum item offers %v, want only approve and reject (no standing grants)", got)
		}
	})

	t.Run("OwnerCannotApproveAlone", func(t *testing.T) {
		a := f.bigPayment(t)
		_, err := f.store.Decide(ctx, a.ID, f.maya, approval.Approve, "")
		if approval.KindOf(err) != approval.KindNotFound {
			t.Fatalf("Maya approving her own agent's two-person call: %v, want not found", err)
		}
		if _, err := f.store.Decide(ctx, a.ID, f.sam, approval.Approve, ""); approval.KindOf(err) != approval.KindNotFound {
			t.Fatalf("Sam (not finance): %v, want not found", err)
		}
		if got := f.get(t, a.ID, f.finn); got.ApprovalsIn != 0 || got.Status != approval.StatusPending {
			t.Fatalf("after refused attempts: %d approvals, %s", got.ApprovalsIn, got.Status)
		}
	})

	t.Run("TwoApproveThenClaimOnce", func(t *testing.T) {
		a := f.bigPayment(t)
		got, err := f.store.Decide(ctx, a.ID, f.finn, approval.Approve, "")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != approval.StatusPending || got.ApprovalsIn != 1 {
			t.Fatalf("after Finn: %s with %d approvals, want pending with 1", got.Status, got.ApprovalsIn)
		}
		if _, err := f.store.Decide(ctx, a.ID, f.finn, approval.Approve, ""); approval.KindOf(err) != approval.KindConflict {
			t.Fatalf("Finn again: %v, want a conflict", err)
		}
		got, err = f.store.Decide(ctx, a.ID, f.fiona, approval.Approve, "")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != approval.StatusApproved || got.ApprovalsIn != 2 {
			t.Fatalf("after Fiona: %s with %d approvals", got.Status, got.ApprovalsIn)
		}
		claimed, err := f.store.Claim(ctx, f.mayaKey, a.ID, a.CallID, a.ArgumentsDigest)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(claimed.DecidedBy) != "[Finn Fiona]" {
			t.Errorf("decided by %v, want [Finn Fiona]", claimed.DecidedBy)
		}
		if _, err := f.store.Claim(ctx, f.mayaKey, a.ID, a.CallID, a.ArgumentsDigest); approval.KindOf(err) != approval.KindConflict {
			t.Fatalf("second claim: %v, want a conflict", err)
		}
		lines := f.auditOf(t, a.ID, approval.ActionApproved)
		if len(lines) != 2 {
			t.Fatalf("%d approved lines, want one per approval", len(lines))
		}
	})

	for _, who := range []string{"finn", "fiona"} {
		t.Run("RejectEndsIt/"+who, func(t *testing.T) {
			a := f.bigPayment(t)
			first, second := f.finn, f.fiona
			if who == "fiona" {
				first, second = f.fiona, f.finn
			}
			if _, err := f.store.Decide(ctx, a.ID, second, approval.Approve, ""); err != nil {
				t.Fatal(err)
			}
			got, err := f.store.Decide(ctx, a.ID, first, approval.Reject, "too much")
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != approval.StatusRejected {
				t.Fatalf("after a rejection: %s", got.Status)
			}
			if _, err := f.store.Claim(ctx, f.mayaKey, a.ID, a.CallID, a.ArgumentsDigest); approval.KindOf(err) != approval.KindConflict {
				t.Fatalf("claim of a rejected item: %v", err)
			}
		})
	}

	t.Run("ConcurrentApprovalsByOnePersonCountOnce", func(t *testing.T) {
		a := f.bigPayment(t)
		var wg sync.WaitGroup
		errs := make([]error, 20)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = f.store.Decide(ctx, a.ID, f.finn, approval.Approve, "")
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case approval.KindOf(err) != approval.KindConflict:
				t.Errorf("a concurrent approval failed otherwise: %v", err)
			}
		}
		got := f.get(t, a.ID, f.finn)
		if ok != 1 || got.ApprovalsIn != 1 || got.Status != approval.StatusPending {
			t.Fatalf("20 approvals by Finn: %d recorded, %d counted, %s; want 1, 1, pending", ok, got.ApprovalsIn, got.Status)
		}
		if n := len(f.auditOf(t, a.ID, approval.ActionApproved)); n != 1 {
			t.Fatalf("%d audit lines for one person's approvals, want 1", n)
		}
	})
}

// TestTeamKeyItems: a service agent's key may omit user; its items go to
// the key's team, and only its members may see and decide them.
func TestTeamKeyItems(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	res := f.ask(t, f.platformKey, "", "deploy", `{"env": "prod"}`)
	if res.Approval == nil {
		t.Fatalf("a team key's call did not wait: %+v %s", res.Outcome, res.Message)
	}
	a := *res.Approval
	if a.OwnerSubject != "" || a.OwnerTeam != "platform" {
		t.Fatalf("owner %q team %q", a.OwnerSubject, a.OwnerTeam)
	}
	if len(a.AvailableDecisions) != 2 {
		t.Errorf("a team's item offers %v: standing grants are a person's own", a.AvailableDecisions)
	}
	for _, u := range []db.User{f.sam, f.maya} {
		if n, _ := f.store.PendingCountFor(ctx, u.Subject); n != 1 {
			t.Errorf("%s counts %d, want 1", u.Subject, n)
		}
	}
	for _, u := range []db.User{f.finn, f.fiona} {
		if n, _ := f.store.PendingCountFor(ctx, u.Subject); n != 0 {
			t.Errorf("%s counts %d, want 0", u.Subject, n)
		}
		if _, err := f.store.ApprovalForViewer(ctx, a.ID, u.Subject); approval.KindOf(err) != approval.KindNotFound {
			t.Errorf("%s reads it: %v", u.Subject, err)
		}
	}
	if who, err := f.store.DecidersOf(ctx, a.ID); err != nil || fmt.Sprint(who) != "[maya sam]" {
		t.Errorf("deciders %v %v, want [maya sam]", who, err)
	}
	if _, err := f.store.Decide(ctx, a.ID, f.finn, approval.Approve, ""); approval.KindOf(err) != approval.KindNotFound {
		t.Fatalf("Finn deciding platform's item: %v", err)
	}
	if got, err := f.store.Decide(ctx, a.ID, f.sam, approval.Approve, ""); err != nil || got.Status != approval.StatusApproved {
		t.Fatalf("Sam: %v %v", got.Status, err)
	}
	// A person's key still needs user.
	_, err := f.store.Check(ctx, f.mayaKey, db.CheckRequest{CallID: "x", ConversationID: "c", TurnID: "t", Connector: "payments",
		Tool: "deploy", Arguments: `{}`}, orgCheck)
	if approval.KindOf(err) != approval.KindInvalid {
		t.Fatalf("a person's key without user: %v, want invalid", err)
	}
}

func (f *orgFixture) get(t *testing.T, id string, viewer db.User) db.Approval {
	t.Helper()
	a, err := f.store.ApprovalForViewer(context.Background(), id, viewer.Subject)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (f *orgFixture) auditOf(t *testing.T, id, action string) []string {
	t.Helper()
	rows, err := f.store.Pool.Query(context.Background(), `SELECT actor_id FROM audit_events WHERE approval_id = $1 AND action = $2 ORDER BY id`, id, action)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestStandingNeverForOthersRules: a standing grant is a person's own. A
// grant given while the owner decided is ignored (not merely hidden) once
// a call's rule names others — "Always allow", conversation and scoped
// grants alike — and a playbook owner cannot pre-approve such a tool.
func TestStandingNeverForOthersRules(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	// A scoped grant ("Always allow calls like this") first: it covers a
	// small payment, and is ignored for a big one.
	if _, err := f.store.Pool.Exec(ctx, `INSERT INTO standing_grants (user_subject, tool_id, policy_version, scope, scope_words)
		SELECT $1, t.id, t.policy_version, '{"args":{"fixed":{},"free":["amount"]}}'::jsonb, 'any amount' FROM tools t WHERE t.name = 'send'`,
		f.maya.Subject); err != nil {
		t.Fatal(err)
	}
	if res := f.ask(t, f.mayaKey, f.maya.Subject, "send", `{"amount": 5}`); res.Outcome.Verdict != approval.Allow || !res.Outcome.Scoped {
		t.Fatalf("a small payment under the scoped grant: %+v", res.Outcome)
	}
	if res := f.ask(t, f.mayaKey, f.maya.Subject, "send", `{"amount": 30000}`); res.Outcome.Verdict != approval.Pending {
		t.Fatalf("a big payment under a scoped grant: %+v", res.Outcome)
	}
	small := f.ask(t, f.mayaKey, f.maya.Subject, "send", `{"amount": 10, "memo": "x"}`)
	if small.Approval == nil {
		t.Fatalf("a small payment outside the scope: %+v", small.Outcome)
	}
	if _, err := f.store.Decide(ctx, small.Approval.ID, f.maya, approval.AlwaysAllow, ""); err != nil {
		t.Fatal(err)
	}
	if res := f.ask(t, f.mayaKey, f.maya.Subject, "send", `{"amount": 20, "memo": "y"}`); res.Outcome.Verdict != approval.Allow {
		t.Fatalf("a small payment under Maya's Always allow: %+v", res.Outcome)
	}
	if res := f.ask(t, f.mayaKey, f.maya.Subject, "send", `{"amount": 20000}`); res.Outcome.Verdict != approval.Pending {
		t.Fatalf("a big payment under Maya's Always allow: %+v, want it to wait for two of finance", res.Outcome)
	}

	def := approval.Definition{Name: "Pay", Instructions: "pay", Steps: []approval.Step{{ID: "s", Title: "S",
		WorkType: approval.WorkType{ID: "w", Version: "1"}, Tools: []approval.Pair{{Connector: "payments", Tool: "send"}}}}}
	pb, err := f.store.UpsertPlaybook(ctx, approval.SystemActor, "pb", f.maya.Subject, def)
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.store.PreApprove(ctx, f.maya, "pb", pb.Fingerprint)
	if e := approval.AsError(err); e == nil || e.Code != db.CodePreapprovalNeedsDeciders || n != 0 ||
		!strings.Contains(e.Message, "two of finance") {
		t.Fatalf("pre-approving a two-person tool: %d %v", n, err)
	}
}
