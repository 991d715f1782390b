package handlers_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/countersign/countersign/approval"
)

// After an admin turns standing approval off, the pending item's page no
// longer draws "Always allow", and posting it anyway is refused with 422:
// nothing recorded, the item still pending; "Approve" still works.
func TestStandingOffRefusesAlwaysAllow(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	policy := approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true}
	if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email", policy); err != nil {
		t.Fatal(err)
	}
	id := l.pending(t, l.call("mail", "send_email", `{"to":"finance@acme.example"}`))
	if _, body := l.Member.Get("/approvals/" + id); !contains(body, `value="always"`) {
		t.Fatal("Always allow not offered while standing approval is on")
	}
	policy.StandingApproval = false
	if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email", policy); err != nil {
		t.Fatal(err)
	}
	if _, body := l.Member.Get("/approvals/" + id); contains(body, `value="always"`) || contains(body, `value="approve_conversation"`) {
		t.Fatal("standing answers still drawn after standing approval was turned off")
	}
	status, body := decide(l.Member, id, "always")
	if status != http.StatusUnprocessableEntity || !contains(body, "not offered for this tool") {
		t.Fatalf("always after standing off: %d", status)
	}
	var grants int
	if err := l.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM standing_grants`).Scan(&grants); err != nil {
		t.Fatal(err)
	}
	if grants != 0 || l.status(t, id) != "pending" || l.auditCount(t, id, "always_allowed") != 0 {
		t.Fatalf("refused answer left traces: grants %d, status %s", grants, l.status(t, id))
	}
	if status, _ := decide(l.Member, id, "approve"); status != http.StatusSeeOther || l.status(t, id) != "approved" {
		t.Fatalf("approve: %d %s", status, l.status(t, id))
	}
}
