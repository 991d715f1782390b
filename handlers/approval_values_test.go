package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/dev"
)

// getHTMX fetches path as htmx does (the partial, not the page).
func getHTMX(b interface {
	Do(*http.Request) (*http.Response, string)
}, base, path string) (*http.Response, string) {
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("HX-Request", "true")
	return b.Do(req)
}

func fullArgumentRows(t *testing.T, l *loop, id string) int {
	t.Helper()
	var n int
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM approval_arguments WHERE approval_id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A folded value can be expanded to its full text by its owner, while the
// item waits; the text is escaped and hidden characters are markers.
func TestApprovalValueExpands(t *testing.T) {
	l := newLoop(t)
	long := strings.Repeat("a", 3500) + "<img src=x onerror=alert(1)>" + "\u202e" + "MIDDLE" + strings.Repeat("z", 1500) + "TAIL-END"
	id := l.pending(t, l.call("mail", "send_email", `{"to":"a@acme.example","body":"`+long+`"}`))

	t.Run("CardOffersIt", func(t *testing.T) {
		_, body := l.Member.Get("/")
		if !strings.Contains(body, `href="/approvals/`+id+`/values/1"`) || !strings.Contains(body, "947 characters hidden — show") {
			t.Fatal("no expand link on the folded value")
		}
		if !strings.Contains(body, "zzzTAIL-END") || strings.Contains(body, "MIDDLE") {
			t.Fatal("the end is not shown, or the middle is not folded")
		}
		if strings.Contains(body, `/approvals/`+id+`/values/0"`) {
			t.Fatal("expand link on a value that was not shortened")
		}
	})
	t.Run("OK", func(t *testing.T) {
		resp, body := getHTMX(l.Member, l.BaseURL, "/approvals/"+id+"/values/1")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "MIDDLE") || !strings.Contains(body, "Full text, 5043 characters") {
			t.Fatalf("expand: %d\n%s", resp.StatusCode, body)
		}
		if strings.Contains(body, "<img") || !strings.Contains(body, "&lt;img") {
			t.Fatal("not escaped:", body)
		}
		if strings.Contains(body, "\u202e") || !strings.Contains(body, "⟨U+202E⟩") || !strings.Contains(body, `<bdi class="untrusted">`) {
			t.Fatal("hidden character not shown as a marker, or not isolated")
		}
		if strings.Contains(body, "<html") {
			t.Fatal("htmx gets the partial, not the page")
		}
		resp, body = l.Member.Get("/approvals/" + id + "/values/1")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "<html") || !strings.Contains(body, "TAIL-END") {
			t.Fatal("without script: no page with the value", resp.StatusCode)
		}
	})
	t.Run("ErrNoSuchLine", func(t *testing.T) {
		for _, n := range []string{"2", "-1", "x", "3x"} {
			if resp, _ := getHTMX(l.Member, l.BaseURL, "/approvals/"+id+"/values/"+n); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("line %s: %d", n, resp.StatusCode)
			}
		}
	})
	t.Run("ErrNotOwner", func(t *testing.T) {
		admin := l.NewBrowser()
		admin.SignIn("admin")
		resp, body := getHTMX(admin, l.BaseURL, "/approvals/"+id+"/values/1")
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "MIDDLE") {
			t.Fatalf("another user: %d", resp.StatusCode)
		}
		if !strings.Contains(l.Logs(), "full value refused") {
			t.Fatal("the attempt is not logged")
		}
	})
	t.Run("RemovedWhenDecided", func(t *testing.T) {
		if fullArgumentRows(t, l, id) != 1 {
			t.Fatal("the full text is not kept while pending")
		}
		decide(l.Member, id, "reject")
		if n := fullArgumentRows(t, l, id); n != 0 {
			t.Fatalf("full text kept after the decision: %d rows", n)
		}
		resp, body := getHTMX(l.Member, l.BaseURL, "/approvals/"+id+"/values/1")
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "MIDDLE") || !strings.Contains(body, "no longer waiting") {
			t.Fatalf("after the decision: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("RemovedWhenExpiredOrCancelled", func(t *testing.T) {
		ctx := context.Background()
		exp := l.pending(t, l.call("mail", "send_email", `{"body":"`+long+`"}`))
		_, _ = l.DB.Pool.Exec(ctx, `UPDATE approvals SET expires_at = now() WHERE id = $1`, exp)
		// Due but not swept yet: not shown either.
		if resp, _ := getHTMX(l.Member, l.BaseURL, "/approvals/"+exp+"/values/0"); resp.StatusCode != http.StatusNotFound {
			t.Fatal("a due item's full text is shown:", resp.StatusCode)
		}
		if _, err := l.DB.ExpireDue(ctx, 10); err != nil {
			t.Fatal(err)
		}
		c := l.call("mail", "send_email", `{"body":"`+long+`"}`)
		c["turn_id"] = "turn-stop"
		can := l.pending(t, c)
		if _, err := l.Client.CancelTurn(ctx, dev.DemoMember.Subject, "conv-1", "turn-stop"); err != nil {
			t.Fatal(err)
		}
		if fullArgumentRows(t, l, exp)+fullArgumentRows(t, l, can) != 0 {
			t.Fatal("full text kept after expiry or cancellation")
		}
	})
	t.Run("RawArguments", func(t *testing.T) {
		raw := `{"broken": "` + strings.Repeat("b", 6000) + `END`
		rid := l.pending(t, l.call("mail", "send_email", raw))
		resp, body := getHTMX(l.Member, l.BaseURL, "/approvals/"+rid+"/values/raw")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "bEND") {
			t.Fatalf("raw: %d", resp.StatusCode)
		}
	})
}
