package handlers_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/countersign/countersign/dev"
)

func TestDecide(t *testing.T) {
	l := newLoop(t)
	send := `{"to":"finance@acme.example","subject":"Invoice"}`

	t.Run("OK", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", send))
		status, _ := decide(l.Member, id, "approve")
		if status != http.StatusSeeOther || l.status(t, id) != "approved" {
			t.Fatalf("decide: %d %s", status, l.status(t, id))
		}
		if l.auditCount(t, id, "approved") != 1 {
			t.Fatal("no audit line for the decision")
		}
	})

	t.Run("ErrNotOwner", func(t *testing.T) {
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
	})

	t.Run("ReviewerNeverFromBody", func(t *testing.T) {
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
	})

	t.Run("ErrReplay", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", send))
		if status, _ := decide(l.Member, id, "reject"); status != http.StatusSeeOther {
			t.Fatal(status)
		}
		status, body := decide(l.Member, id, "approve")
		if status != http.StatusConflict || !contains(body, "already answered") || l.status(t, id) != "rejected" {
			t.Fatalf("replay: %d %s", status, l.status(t, id))
		}
		if l.auditCount(t, id, "") != 2 { // requested + rejected
			t.Fatalf("audit lines %d", l.auditCount(t, id, ""))
		}
	})

	t.Run("ErrNotOffered", func(t *testing.T) {
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
	})

	t.Run("ErrExpired", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", send))
		_, _ = l.DB.Pool.Exec(context.Background(), `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
		status, body := decide(l.Member, id, "approve")
		if status != http.StatusConflict || !contains(body, "expired") || l.status(t, id) != "pending" {
			t.Fatalf("expired: %d %s", status, l.status(t, id))
		}
	})

	t.Run("ErrCancelledTurn", func(t *testing.T) {
		c := l.call("mail", "send_email", send)
		c["turn_id"] = "turn-cancel"
		id := l.pending(t, c)
		if n, err := l.Client.CancelTurn(context.Background(), dev.DemoMember.Subject, "conv-1", "turn-cancel"); err != nil || n != 1 {
			t.Fatalf("cancel: %d %v", n, err)
		}
		if status, _ := decide(l.Member, id, "approve"); status != http.StatusConflict || l.status(t, id) != "cancelled" {
			t.Fatalf("cancelled: %d %s", status, l.status(t, id))
		}
	})

	t.Run("ErrMalformedID", func(t *testing.T) {
		if status, _ := decide(l.Member, "not-a-uuid", "approve"); status != http.StatusNotFound {
			t.Fatal(status)
		}
	})

	t.Run("ConcurrentDecisionsOneWinner", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", send))
		l.Member.CSRF() // warm the session
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				d := "approve"
				if i%2 == 1 {
					d = "reject"
				}
				status, _ := decide(l.Member, id, d)
				mu.Lock()
				codes[status]++
				mu.Unlock()
			}(i)
		}
		wg.Wait()
		if codes[http.StatusSeeOther] != 1 || codes[http.StatusConflict] != 49 {
			t.Fatalf("status counts %v", codes)
		}
		var lines int
		_ = l.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action IN ('approved','rejected')`, id).Scan(&lines)
		if lines != 1 {
			t.Fatalf("decision audit lines %d", lines)
		}
	})

	t.Run("TerminalIsTerminalInTheDatabase", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", `{"to":"terminal@example.com"}`))
		decide(l.Member, id, "reject")
		_, err := l.DB.Pool.Exec(context.Background(), `UPDATE approvals SET status = 'approved' WHERE id = $1`, id)
		if err == nil {
			t.Fatal("a rejected item became approved")
		}
	})
}
