package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/countersign/countersign/dev"
)

func TestDecide(t *testing.T) {
	l := newLoop(t)
	send := `{"to":"finance@acme.example","subject":"Invoice"}`
	s := decideCase{l: l, send: send}
	t.Run("OK", s.ok)
	t.Run("ErrNotOwner", s.errNotOwner)
	t.Run("ReviewerNeverFromBody", s.reviewerNeverFromBody)
	t.Run("ErrReplay", s.errReplay)
	t.Run("ErrNotOffered", s.errNotOffered)
	t.Run("ErrExpired", s.errExpired)
	t.Run("ErrExpiredSwept", s.errExpiredSwept)
	t.Run("ErrCancelledTurn", s.errCancelledTurn)
	t.Run("ErrDecisionInQuery", s.errDecisionInQuery)
	t.Run("ErrMalformedID", s.errMalformedID)
	t.Run("ConcurrentDecisionsOneWinner", s.concurrentDecisionsOneWinner)
	t.Run("TerminalIsTerminalInTheDatabase", s.terminalIsTerminalInTheDatabase)
}

// decideCase is the loop and the call TestDecide's cases decide.
type decideCase struct {
	l    *loop
	send string
}

func (s decideCase) ok(t *testing.T) {
	l, send := s.l, s.send
	id := l.pending(t, l.call("mail", "send_email", send))
	status, _ := decide(l.Member, id, "approve")
	if status != http.StatusSeeOther || l.status(t, id) != "approved" {
		t.Fatalf("decide: %d %s", status, l.status(t, id))
	}
	if l.auditCount(t, id, "approved") != 1 {
		t.Fatal("no audit line for the decision")
	}
}

func (s decideCase) errNotOwner(t *testing.T) {
	l, send := s.l, s.send
	id := l.pending(t, l.call("mail", "send_email", send))
	admin := l.NewBrowser()
	admin.SignIn("admin")
	status, _ := decide(admin, id, "approve")
	if status != http.StatusNotFound || l.status(t, id) != "pending" {
		t.Fatalf("non-owner: %d %s", status, l.status(t, id))
	}
	if !contains(l.Logs(), "decision refused") {
		t.Fatal("attempt not logged")
	}
	if l.auditCount(t, id, "approved") != 0 {
		t.Fatal("audit line for a failed decision")
	}
}

func (s decideCase) reviewerNeverFromBody(t *testing.T) {
	l, send := s.l, s.send
	// An admin naming the owner in the form is still not the owner.
	id := l.pending(t, l.call("mail", "send_email", send))
	admin := l.NewBrowser()
	admin.SignIn("admin")
	if status, _ := decide(admin, id, "approve", "user", dev.DemoMember.Subject, "reviewer", dev.DemoMember.Subject); status != http.StatusNotFound {
		t.Fatalf("admin posing as owner: %d", status)
	}
	// The owner naming someone else still decides as themselves.
	if status, _ := decide(l.Member, id, "approve", "user", dev.DemoAdmin.Subject, "reviewer_id", "999"); status != http.StatusSeeOther {
		t.Fatalf("owner: %d", status)
	}
	var reviewer string
	_ = l.DB.Pool.QueryRow(context.Background(), `SELECT u.subject FROM approvals a JOIN users u ON u.id = a.reviewer_id WHERE a.id = $1`, id).Scan(&reviewer)
	if reviewer != dev.DemoMember.Subject {
		t.Fatalf("reviewer %q", reviewer)
	}
}

func (s decideCase) errReplay(t *testing.T) {
	l, send := s.l, s.send
	id := l.pending(t, l.call("mail", "send_email", send))
	if status, _ := decide(l.Member, id, "reject"); status != http.StatusSeeOther {
		t.Fatal(status)
	}
	status, body := decide(l.Member, id, "approve")
	if status != http.StatusConflict || !contains(body, "already answered: rejected by you") || l.status(t, id) != "rejected" {
		t.Fatalf("replay: %d %s %s", status, l.status(t, id), body)
	}
	if l.auditCount(t, id, "") != 2 { // requested + rejected
		t.Fatalf("audit lines %d", l.auditCount(t, id, ""))
	}
}

func (s decideCase) errNotOffered(t *testing.T) {
	l := s.l
	// upload_file does not offer standing approval.
	id := l.pending(t, l.call("files", "upload_file", `{"path":"/x","destination":"https://up.example"}`))
	for _, d := range []string{"always", "approve_conversation", "delete", ""} {
		if status, _ := decide(l.Member, id, d); status != http.StatusUnprocessableEntity {
			t.Fatalf("%q: %d", d, status)
		}
	}
	if l.status(t, id) != "pending" {
		t.Fatal("state changed")
	}
}

func (s decideCase) errExpired(t *testing.T) {
	l, send := s.l, s.send
	// Due but not yet swept: still pending in the table, expired by
	// the database's clock.
	id := l.pending(t, l.call("mail", "send_email", send))
	if _, err := l.DB.Pool.Exec(context.Background(), `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	status, body := decide(l.Member, id, "approve")
	if status != http.StatusConflict || !contains(body, "This request expired before it was answered") || l.status(t, id) != "pending" {
		t.Fatalf("expired: %d %s %s", status, l.status(t, id), body)
	}
	r := postDecision(l.Member, l.Member.CSRF(), id, "reject", true)
	if text, code := lateText(t, r); r.Status != http.StatusConflict || code != "expired" || !contains(text, "Expired") || contains(text, "already answered") {
		t.Fatalf("expired (htmx): %d %s %s", r.Status, code, text)
	}
}

func (s decideCase) errExpiredSwept(t *testing.T) {
	l := s.l
	id := l.pending(t, l.call("mail", "send_email", `{"to":"swept@example.com"}`))
	if _, err := l.DB.Pool.Exec(context.Background(), `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if err := l.DB.ExpireIfDue(context.Background(), id); err != nil || l.status(t, id) != "expired" {
		t.Fatalf("sweep: %v %s", err, l.status(t, id))
	}
	r := postDecision(l.Member, l.Member.CSRF(), id, "approve", true)
	if text, code := lateText(t, r); r.Status != http.StatusConflict || code != "expired" || !contains(text, "expired before it was answered") {
		t.Fatalf("expired (swept): %d %s %s", r.Status, code, text)
	}
}

func (s decideCase) errCancelledTurn(t *testing.T) {
	l, send := s.l, s.send
	c := l.call("mail", "send_email", send)
	c["turn_id"] = "turn-cancel"
	id := l.pending(t, c)
	if n, err := l.Client.CancelTurn(context.Background(), dev.DemoMember.Subject, "conv-1", "turn-cancel"); err != nil || n != 1 {
		t.Fatalf("cancel: %d %v", n, err)
	}
	if status, body := decide(l.Member, id, "approve"); status != http.StatusConflict || l.status(t, id) != "cancelled" ||
		!contains(body, "This request was cancelled before it was answered") {
		t.Fatalf("cancelled: %d %s %s", status, l.status(t, id), body)
	}
}

func (s decideCase) errDecisionInQuery(t *testing.T) {
	l := s.l
	// Only the POST body counts: a decision in the URL is not one.
	id := l.pending(t, l.call("mail", "send_email", `{"to":"query@example.com"}`))
	resp, _ := l.Member.PostForm("/approvals/"+id+"/decision?decision=approve", url.Values{})
	if resp.StatusCode != http.StatusUnprocessableEntity || l.status(t, id) != "pending" || l.auditCount(t, id, "approved") != 0 {
		t.Fatalf("query-only decision: %d %s", resp.StatusCode, l.status(t, id))
	}
	// Nor is a reason.
	resp, _ = l.Member.PostForm("/approvals/"+id+"/decision?reason=from+the+query", url.Values{"decision": {"reject"}})
	var reason string
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT reject_reason FROM approvals WHERE id = $1`, id).Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSeeOther || l.status(t, id) != "rejected" || reason != "" {
		t.Fatalf("reason from the query: %d %s %q", resp.StatusCode, l.status(t, id), reason)
	}
}

func (s decideCase) errMalformedID(t *testing.T) {
	l := s.l
	if status, _ := decide(l.Member, "not-a-uuid", "approve"); status != http.StatusNotFound {
		t.Fatal(status)
	}
}

func (s decideCase) concurrentDecisionsOneWinner(t *testing.T) {
	l, send := s.l, s.send
	// Every loser is told what won, never "expired".
	id := l.pending(t, l.call("mail", "send_email", send))
	assertOneWinnerTheRestTold(t, l, id, decideConcurrently(l, id, 50))
}

func (s decideCase) terminalIsTerminalInTheDatabase(t *testing.T) {
	l := s.l
	id := l.pending(t, l.call("mail", "send_email", `{"to":"terminal@example.com"}`))
	decide(l.Member, id, "reject")
	_, err := l.DB.Pool.Exec(context.Background(), `UPDATE approvals SET status = 'approved' WHERE id = $1`, id)
	if err == nil {
		t.Fatal("a rejected item became approved")
	}
}
