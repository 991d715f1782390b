package db_test

import (
	"context"
	"slices"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

func (f *blockFixture) setStanding(t *testing.T, standing bool) {
	t.Helper()
	var err error
	if f.tool, err = f.store.SetToolPolicy(context.Background(), approval.SystemActor, "mail", "send_email",
		approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: standing}); err != nil {
		t.Fatal(err)
	}
}

func countGrants(t *testing.T, store *db.DB) int {
	t.Helper()
	var n int
	if err := store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM standing_grants`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Turning standing approval off withdraws "Allow in this conversation" and
// "Always allow" from the tool's pending items; a standing answer is then
// refused (422) and records nothing, while "Approve" still works.
func TestStandingOffWithdrawsStandingDecisions(t *testing.T) {
	ctx := context.Background()
	f := newBlockFixture(t)
	a, _ := f.pending(t, "turn")
	if !slices.Contains(a.AvailableDecisions, string(approval.AlwaysAllow)) {
		t.Fatalf("standing answers not offered before the change: %v", a.AvailableDecisions)
	}
	f.setStanding(t, false)
	got := f.get(t, a.ID)
	if want := []string{string(approval.Approve), string(approval.Reject)}; !slices.Equal(got.AvailableDecisions, want) {
		t.Fatalf("available decisions after standing off = %v, want %v", got.AvailableDecisions, want)
	}
	for _, dec := range []approval.Decision{approval.AlwaysAllow, approval.ApproveConversation} {
		_, err := f.store.Decide(ctx, a.ID, f.user, dec, "")
		if approval.KindOf(err) != approval.KindUnprocessable {
			t.Fatalf("%s after standing off: err = %v, want 422", dec, err)
		}
	}
	if n := countGrants(t, f.store); n != 0 {
		t.Fatalf("%d standing grants recorded, want none", n)
	}
	if st := f.get(t, a.ID).Status; st != approval.StatusPending {
		t.Fatalf("status = %s, want pending", st)
	}
	out, err := f.store.Decide(ctx, a.ID, f.user, approval.Approve, "")
	if err != nil || out.Status != approval.StatusApproved {
		t.Fatalf("approve: %v %s", err, out.Status)
	}
}

// Decide reads the tool's policy at decision time, not only the item's
// buttons: an item that still lists "Always allow" for a tool that no
// longer offers standing approval is refused all the same.
func TestDecideRefusesStandingTheToolNoLongerOffers(t *testing.T) {
	ctx := context.Background()
	f := newBlockFixture(t)
	a, _ := f.pending(t, "turn")
	if _, err := f.store.Pool.Exec(ctx, `UPDATE tools SET standing_approval = false WHERE id = $1`, a.ToolID); err != nil {
		t.Fatal(err)
	}
	_, err := f.store.Decide(ctx, a.ID, f.user, approval.AlwaysAllow, "")
	if approval.KindOf(err) != approval.KindUnprocessable {
		t.Fatalf("always for a tool without standing approval: err = %v, want 422", err)
	}
	if n := countGrants(t, f.store); n != 0 {
		t.Fatalf("%d standing grants recorded, want none", n)
	}
	if st := f.get(t, a.ID).Status; st != approval.StatusPending {
		t.Fatalf("status = %s, want pending", st)
	}
}
