package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

// claimDecidedBy claims approved item a with Maya's key and returns its
// decided_by.
func (f *orgFixture) claimDecidedBy(t *testing.T, a db.Approval) []string {
	t.Helper()
	claimed, err := f.store.Claim(context.Background(), f.mayaKey, a.ID, a.CallID, a.ArgumentsDigest)
	if err != nil {
		t.Fatal(err)
	}
	return claimed.DecidedBy
}

// decide approves a as u and checks how many approvals then count.
func (f *orgFixture) approveCounting(t *testing.T, a db.Approval, u db.User, in int, status approval.Status) {
	t.Helper()
	got, err := f.store.Decide(context.Background(), a.ID, u, approval.Approve, "")
	if err != nil {
		t.Fatalf("%s approves: %v", u.Name, err)
	}
	if got.ApprovalsIn != in || got.Status != status {
		t.Fatalf("after %s: %s with %d approvals, want %s with %d", u.Name, got.Status, got.ApprovalsIn, status, in)
	}
}

// decided_by, and the item's approvers as read later, name exactly the
// votes that counted when the quorum was met: not a vote of someone who
// left the team before then (though it stays recorded), and not one who
// left only after (their vote counted).
func TestDecidedByLeaver(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	frank := f.signFinance(t, "frank", "Frank")
	a := f.bigPayment(t)
	f.approveCounting(t, a, f.finn, 1, approval.StatusPending)
	f.leaveTeams(t, f.finn)
	f.approveCounting(t, a, f.fiona, 1, approval.StatusPending)
	f.approveCounting(t, a, frank, 2, approval.StatusApproved)
	// Fiona leaves after the quorum was met: her vote counted.
	f.leaveTeams(t, f.fiona)
	if got, err := f.store.DecidedBy(ctx, f.get(t, a.ID, frank)); err != nil || fmt.Sprint(got) != "[Fiona Frank]" {
		t.Fatalf("decided by %v %v, want [Fiona Frank]", got, err)
	}
	if got := f.claimDecidedBy(t, a); fmt.Sprint(got) != "[Fiona Frank]" {
		t.Fatalf("the claim's decided_by %v, want [Fiona Frank]", got)
	}
	if n := f.count(t, votesOf, a.ID); n != 3 {
		t.Fatalf("%d votes recorded, want all 3", n)
	}
}

// A vote cast with a session before the item came to need a passkey does
// not count, and decided_by does not name it.
func TestDecidedByPasskeyBecameRequired(t *testing.T) {
	ctx := context.Background()
	f := newQuorumProofFixture(t)
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
	f.approveCounting(t, a, f.finn, 1, approval.StatusPending)
	if _, err := f.store.SetToolProof(ctx, approval.SystemActor, toolID, 0, approval.ProofPasskey, ""); err != nil {
		t.Fatal(err)
	}
	a = f.get(t, a.ID, f.fiona)
	if a.ApprovalsIn != 0 {
		t.Fatalf("Finn's session vote still counts once a passkey is required: %d", a.ApprovalsIn)
	}
	if got, err := f.approve(f.fiona, a, f.assert(t, "fiona", a)); err != nil || got.Status != approval.StatusPending {
		t.Fatalf("Fiona: %v %+v", err, got.Status)
	}
	if got, err := f.approve(frank, a, f.assert(t, "frank", a)); err != nil || got.Status != approval.StatusApproved {
		t.Fatalf("Frank: %v %+v", err, got.Status)
	}
	if got := f.claimDecidedBy(t, a); fmt.Sprint(got) != "[Fiona Frank]" {
		t.Fatalf("the claim's decided_by %v, want [Fiona Frank]", got)
	}
}

// escalatedPayment is a big payment escalated to platform (the backup
// team), escalated by calling the escalation directly.
func (f *orgFixture) escalatedPayment(t *testing.T) db.Approval {
	t.Helper()
	ctx := context.Background()
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "payments", "send", approval.Policy{Mode: approval.ModeRequireApproval,
		StandingApproval: true, Rule: approval.DeciderRule{Deciders: approval.DecidersQuorum, Team: "finance", Quorum: 2},
		DecidersCondition: "args.amount > 10000", Escalation: approval.Escalation{Team: "platform", After: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	a := f.bigPayment(t)
	if _, err := f.store.Pool.Exec(ctx, `UPDATE approvals SET escalate_at = now() - interval '1 second' WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.EscalateDue(ctx, 10); err != nil || n != 1 {
		t.Fatalf("escalate: %d %v", n, err)
	}
	return f.get(t, a.ID, f.finn)
}

// Invariant 15, strictly: a delegate never counts beside the person they
// stand in for — also when the delegate is a member of the backup team of
// an escalated quorum item. Fiona (finance) names Sam (platform, the
// backup team) her delegate: whichever of the two approves first is their
// one vote; the other's approval is refused, and the item needs another
// person. decided_by names the two people who counted.
func TestDelegateOnBackupTeamCountsOnce(t *testing.T) {
	ctx := context.Background()
	for _, order := range [][2]string{{"fiona", "sam"}, {"sam", "fiona"}} {
		t.Run(order[0]+"First", func(t *testing.T) {
			f := newOrgFixture(t)
			f.delegate(t, f.fiona, "sam@example.com")
			a := f.escalatedPayment(t)
			who := map[string]db.User{"fiona": f.fiona, "sam": f.sam}
			f.approveCounting(t, a, who[order[0]], 1, approval.StatusPending)
			_, err := f.store.Decide(ctx, a.ID, who[order[1]], approval.Approve, "")
			if e := approval.AsError(err); e == nil || e.Kind != approval.KindConflict {
				t.Fatalf("%s after %s: %v, want refused", order[1], order[0], err)
			}
			if got := f.get(t, a.ID, f.finn); got.ApprovalsIn != 1 || got.Status != approval.StatusPending {
				t.Fatalf("after the pair: %s with %d approvals", got.Status, got.ApprovalsIn)
			}
			f.approveCounting(t, a, f.finn, 2, approval.StatusApproved)
			want := fmt.Sprintf("[%s Finn]", who[order[0]].Name)
			if got := f.claimDecidedBy(t, a); fmt.Sprint(got) != want {
				t.Fatalf("decided_by %v, want %s", got, want)
			}
		})
	}
}

// The one counting rule (countersign_vote_counts) itself: votes of a
// delegate and their person, however recorded, count once — the earlier.
func TestVoteCountsPairOnce(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	f.delegate(t, f.fiona, "sam@example.com")
	a := f.escalatedPayment(t)
	if _, err := f.store.Pool.Exec(ctx, `INSERT INTO approval_votes (approval, subject, reviewer_id, decision, at) VALUES
		($1, 'fiona', $2, 'approve', now()), ($1, 'sam', $3, 'approve', now() + interval '1 second')`,
		a.ID, f.fiona.ID, f.sam.ID); err != nil {
		t.Fatal(err)
	}
	var counted []string
	rows, err := f.store.Pool.Query(ctx, `SELECT v.subject FROM approval_votes v JOIN approvals a ON a.id = v.approval
		WHERE v.approval = $1 AND countersign_vote_counts(a, v) ORDER BY v.at`, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		counted = append(counted, s)
	}
	rows.Close()
	if fmt.Sprint(counted) != "[fiona]" {
		t.Fatalf("votes that count: %v, want [fiona]", counted)
	}
	if got := f.get(t, a.ID, f.finn); got.ApprovalsIn != 1 {
		t.Fatalf("the item counts %d approvals, want 1", got.ApprovalsIn)
	}
}
