package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A two-of-finance item's request page and the claim's decided_by name
// every approval that counted, not only the last one, and never the vote of
// someone who left finance before the quorum was met.
func TestDecidedByCountedVotes(t *testing.T) {
	l := newOrgLoop(t)
	ctx := context.Background()
	if _, err := l.DB.Pool.Exec(ctx, `INSERT INTO team_members (team, subject, source) VALUES ('finance', 'demo-sam', 'admin')
		ON CONFLICT DO NOTHING`); err != nil {
		t.Fatal(err)
	}
	id := l.payment(t, 25000)
	if status, body := decide(l.Finn, id, "approve"); status != http.StatusSeeOther {
		t.Fatalf("Finn approves: %d %s", status, body)
	}
	if _, err := l.DB.Pool.Exec(ctx, `DELETE FROM team_members WHERE team = 'finance' AND subject = 'demo-finn'`); err != nil {
		t.Fatal(err)
	}
	if status, body := decide(l.Fiona, id, "approve"); status != http.StatusSeeOther {
		t.Fatalf("Fiona approves: %d %s", status, body)
	}
	if l.status(t, id) != "pending" {
		t.Fatal("Finn's vote still counted after he left finance")
	}
	if status, body := decide(l.Sam, id, "approve"); status != http.StatusSeeOther {
		t.Fatalf("Sam approves: %d %s", status, body)
	}
	if l.status(t, id) != "approved" {
		t.Fatalf("after Fiona and Sam: %s", l.status(t, id))
	}
	_, d, _ := page(t, l.Fiona, id)
	who := testid(d, "outcome-who")
	if !strings.Contains(who, "Fiona") || !strings.Contains(who, "Sam") || strings.Contains(who, "Finn") {
		t.Fatalf("the request page says %q, want Fiona and Sam and not Finn", who)
	}
	var callID, digest string
	if err := l.DB.Pool.QueryRow(ctx, `SELECT call_id, arguments_digest FROM approvals WHERE id = $1`, id).Scan(&callID, &digest); err != nil {
		t.Fatal(err)
	}
	status, out := l.API(l.Key, http.MethodPost, "/api/v1/approvals/"+id+"/claim", map[string]any{"call_id": callID, "arguments_digest": digest})
	got := fmt.Sprint(out["decided_by"])
	if status != http.StatusOK || !strings.HasPrefix(got, "[Fiona Finance Sam") || strings.Contains(got, "Finn") {
		t.Fatalf("claim: %d decided_by %v", status, got)
	}
	if w := out["who_decides"]; w != "two of finance (the agent's owner does not count)" {
		t.Fatalf("the claim says who decides: %q", w)
	}
	// After the claim the page still names both.
	_, d, _ = page(t, l.Fiona, id)
	if who := testid(d, "outcome-who"); !strings.Contains(who, "Fiona") || !strings.Contains(who, "Sam") {
		t.Fatalf("the consumed item's page says %q", who)
	}
}
