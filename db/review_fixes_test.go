package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

// leaveTeams signs u in again with no groups: they leave their teams.
func (f *orgFixture) leaveTeams(t *testing.T, u db.User) {
	t.Helper()
	u.Groups = nil
	if _, err := f.store.SignIn(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

// signFinance signs in a new finance member.
func (f *orgFixture) signFinance(t *testing.T, sub, name string) db.User {
	t.Helper()
	u, err := f.store.SignIn(context.Background(), db.User{Issuer: "https://idp.example", Subject: sub, Name: name,
		Email: sub + "@example.com", EmailVerified: true, Groups: []string{"finance"}})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (f *orgFixture) delegate(t *testing.T, person db.User, to string) {
	t.Helper()
	if _, err := f.store.StartDelegation(context.Background(), person, to, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// TestOneVotePerPerson: on a two-of-finance item, Finn votes as a member,
// then leaves finance and becomes Fiona's delegate. His second vote, now
// in Fiona's place, is refused as already answered: one vote per person,
// whatever place they vote in. The item stays pending, and Finn's first
// vote no longer counts (he may not decide it in his own right).
func TestOneVotePerPerson(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	a := f.bigPayment(t)
	if got, err := f.store.Decide(ctx, a.ID, f.finn, approval.Approve, ""); err != nil || got.ApprovalsIn != 1 {
		t.Fatalf("Finn as a member: %v %d", err, got.ApprovalsIn)
	}
	f.leaveTeams(t, f.finn)
	f.delegate(t, f.fiona, "finn@example.com")
	_, err := f.store.Decide(ctx, a.ID, f.finn, approval.Approve, "")
	if e := approval.AsError(err); e == nil || e.Kind != approval.KindConflict || e.Code != approval.CodeAlreadyDecided {
		t.Fatalf("Finn again, as Fiona's delegate: %v, want already answered", err)
	}
	if n := f.count(t, votesOf, a.ID); n != 1 {
		t.Fatalf("%d votes, want Finn's first only", n)
	}
	if got := f.get(t, a.ID, f.fiona); got.Status != approval.StatusPending || got.ApprovalsIn != 0 {
		t.Fatalf("after Finn's refused second vote: %s with %d approvals, want pending with 0", got.Status, got.ApprovalsIn)
	}
}

// TestVoteOfLeaverNotCounted: Finn votes on a two-of-finance item, then
// leaves finance (and, as Frank's delegate, may still decide it — in
// Frank's place, not his own). His vote no longer counts: Fiona's approval
// is one of two; Frank's own completes the quorum.
func TestVoteOfLeaverNotCounted(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	frank := f.signFinance(t, "frank", "Frank")
	a := f.bigPayment(t)
	if _, err := f.store.Decide(ctx, a.ID, f.finn, approval.Approve, ""); err != nil {
		t.Fatal(err)
	}
	f.leaveTeams(t, f.finn)
	f.delegate(t, frank, "finn@example.com")
	got, err := f.store.Decide(ctx, a.ID, f.fiona, approval.Approve, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != approval.StatusPending || got.ApprovalsIn != 1 {
		t.Fatalf("after Fiona, Finn having left: %s with %d approvals, want pending with 1", got.Status, got.ApprovalsIn)
	}
	// The card names whom the count counts: Fiona, not Finn.
	votes, err := f.store.VotesOn(ctx, []string{a.ID})
	if err != nil {
		t.Fatal(err)
	}
	var counted []string
	for _, v := range votes[a.ID] {
		if v.Counts {
			counted = append(counted, v.Subject)
		}
	}
	if len(counted) != 1 || counted[0] != f.fiona.Subject {
		t.Fatalf("votes counted on the card: %v, want Fiona's alone", counted)
	}
	got, err = f.store.Decide(ctx, a.ID, frank, approval.Approve, "")
	if err != nil || got.Status != approval.StatusApproved || got.ApprovalsIn != 2 {
		t.Fatalf("Frank: %v %s %d, want approved with 2", err, got.Status, got.ApprovalsIn)
	}
}

// TestPasskeyAddedMidQuorum: Finn approves a two-of-finance item without a
// passkey; the tool then comes to require one, which the pending item
// takes on. Fiona's approval with her passkey is one of two (Finn's vote,
// cast without a passkey, no longer counts); Frank's with his approves it.
func TestPasskeyAddedMidQuorum(t *testing.T) {
	ctx := context.Background()
	f := newQuorumProofFixture(t)
	// The fixture's tool requires a passkey; start without.
	var toolID int64
	if err := f.store.Pool.QueryRow(ctx, `SELECT id FROM tools WHERE connector = 'payments' AND name = 'send'`).Scan(&toolID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.SetToolProof(ctx, approval.SystemActor, toolID, 0, approval.ProofNone, ""); err != nil {
		t.Fatal(err)
	}
	frank := f.signFinance(t, "frank", "Frank")
	auth := testenv.NewSoftAuthenticator(t, passkeyBase)
	pk, err := f.store.AddPasskey(ctx, frank, "Frank's laptop", auth.Credential(t))
	if err != nil {
		t.Fatal(err)
	}
	f.keys["frank"], f.passkeys["frank"] = auth, pk

	a := f.bigPayment(t)
	if a.ProofRequired == approval.ProofPasskey {
		t.Fatal("the item needs a passkey before the tool does")
	}
	if got, err := f.approve(f.finn, a, nil); err != nil || got.ApprovalsIn != 1 {
		t.Fatalf("Finn without a passkey: %v %d", err, got.ApprovalsIn)
	}
	if _, err := f.store.SetToolProof(ctx, approval.SystemActor, toolID, 0, approval.ProofPasskey, ""); err != nil {
		t.Fatal(err)
	}
	a = f.get(t, a.ID, f.fiona)
	if a.ProofRequired != approval.ProofPasskey {
		t.Fatalf("the pending item's proof: %q, want passkey", a.ProofRequired)
	}
	got, err := f.approve(f.fiona, a, f.assert(t, "fiona", a))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != approval.StatusPending || got.ApprovalsIn != 1 {
		t.Fatalf("after Fiona with her passkey: %s with %d approvals, want pending with 1", got.Status, got.ApprovalsIn)
	}
	got, err = f.approve(frank, a, f.assert(t, "frank", a))
	if err != nil || got.Status != approval.StatusApproved || got.ApprovalsIn != 2 {
		t.Fatalf("Frank with his passkey: %v %s %d, want approved with 2", err, got.Status, got.ApprovalsIn)
	}
}

// TestOwnerNotDelegateOfOwnCall: a finance-team rule on payments.deploy;
// Finn (finance) names Sam as his delegate; Sam's own agent asks. Sam does
// not see the item, and cannot decide it, in Finn's place or any other.
func TestOwnerNotDelegateOfOwnCall(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "payments", "deploy", approval.Policy{Mode: approval.ModeRequireApproval,
		Rule: approval.DeciderRule{Deciders: approval.DecidersTeam, Team: "finance"}}); err != nil {
		t.Fatal(err)
	}
	f.delegate(t, f.finn, "sam@example.com")
	res := f.ask(t, f.mayaKey, f.sam.Subject, "deploy", `{"v": 1}`)
	if res.Approval == nil || res.Approval.Deciders != "team" || res.Approval.OwnerSubject != "sam" {
		t.Fatalf("Sam's deploy: %+v", res.Approval)
	}
	id := res.Approval.ID
	if _, err := f.store.ApprovalForViewer(ctx, id, f.sam.Subject); approval.KindOf(err) != approval.KindNotFound {
		t.Fatalf("Sam reads his own agent's item: %v, want not found", err)
	}
	for _, d := range []approval.Decision{approval.Approve, approval.Reject} {
		if _, err := f.store.Decide(ctx, id, f.sam, d, ""); approval.KindOf(err) != approval.KindNotFound {
			t.Fatalf("Sam %s his own agent's item: %v, want not found", d, err)
		}
	}
	if n := f.count(t, votesOf, id); n != 0 {
		t.Fatalf("%d votes", n)
	}
	// Finn, the team's member, decides it.
	if got, err := f.store.Decide(ctx, id, f.finn, approval.Approve, ""); err != nil || got.Status != approval.StatusApproved {
		t.Fatalf("Finn: %v %s", err, got.Status)
	}
}

// TestActivityTeamKeys: the platform team's key makes a call its policy
// allows, with no user. Sam (platform) sees it on Activity; Fiona (finance
// only, no team key) does not; Finn (finance only) still sees his own
// agent's call, and Sam does not see Finn's.
func TestActivityTeamKeys(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "payments", "deploy", approval.Policy{Mode: approval.ModeAllow}); err != nil {
		t.Fatal(err)
	}
	if res := f.ask(t, f.platformKey, "", "deploy", `{"v": 1}`); res.Outcome.Via != approval.ViaPolicy {
		t.Fatalf("the team key's call: %+v", res.Outcome)
	}
	if res := f.ask(t, f.mayaKey, f.finn.Subject, "deploy", `{"v": 2}`); res.Outcome.Via != approval.ViaPolicy {
		t.Fatalf("Finn's agent's call: %+v", res.Outcome)
	}
	seen := func(viewer db.User) (teamKey, finns int) {
		t.Helper()
		var p db.ActivityPage
		for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var err error
			if p, err = f.store.ListActivity(ctx, viewer, db.ActivityFilter{Tool: "deploy"}); err != nil {
				t.Fatal(err)
			}
			if len(p.Calls) > 0 || time.Now().After(end) || viewer.Subject == "fiona" {
				break
			}
		}
		for _, c := range p.Calls {
			switch {
			case c.OwnerSubject == "" && c.Agent == f.platformKey.Name:
				teamKey++
			case c.OwnerSubject == "finn":
				finns++
			default:
				t.Errorf("%s sees %+v", viewer.Subject, c)
			}
		}
		return
	}
	if tk, fc := seen(f.sam); tk != 1 || fc != 0 {
		t.Errorf("Sam (platform) sees %d team-key calls and %d of Finn's, want 1 and 0", tk, fc)
	}
	if tk, fc := seen(f.fiona); tk != 0 || fc != 0 {
		t.Errorf("Fiona (finance) sees %d team-key calls and %d of Finn's, want none", tk, fc)
	}
	if tk, fc := seen(f.finn); tk != 0 || fc != 1 {
		t.Errorf("Finn (finance) sees %d team-key calls and %d of his own, want 0 and 1", tk, fc)
	}
	agents, err := f.store.ActivityAgents(ctx, f.sam)
	if err != nil || len(agents) != 1 || agents[0] != f.platformKey.Name {
		t.Errorf("Sam's agent filter: %v %v, want the team key", agents, err)
	}
}
