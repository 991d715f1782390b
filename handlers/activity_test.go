package handlers_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/dev"
)

// The Activity page shows each person their own agents' calls with what
// decided them, and revokes a grant from its row: only its owner, only with
// the session's CSRF token, and the page comes back with its filters.
func TestActivityRevoke(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	l.IdP.AddUser(dev.DemoUser{Key: "other", Subject: "other-member", Email: "olga@example.com", Name: "Olga Other", Role: "member"})
	other := l.NewBrowser()
	other.SignIn("other")
	admin := l.NewBrowser()
	admin.SignIn("admin")

	l.offerStanding(t, "calendar", "create_event")
	decide(l.Member, l.pending(t, l.call("calendar", "create_event", `{"t":1}`)), "always")
	if out := l.check(t, l.call("calendar", "create_event", `{"t":2}`)); out["via"] != "always_allow" {
		t.Fatal(out)
	}
	l.check(t, l.call("mail", "search_messages", `{"q":"x"}`)) // allowed by policy
	var grant string
	if err := l.DB.Pool.QueryRow(ctx, `SELECT id::text FROM standing_grants WHERE user_subject = $1`, dev.DemoMember.Subject).Scan(&grant); err != nil {
		t.Fatal(err)
	}
	revoke := "/activity/grants/" + grant + "/revoke"
	active := func() bool {
		t.Helper()
		var n int
		if err := l.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM standing_grants WHERE id = $1::bigint AND revoked_at IS NULL`, grant).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	t.Run("OK_OwnPage", func(t *testing.T) {
		resp, body := l.Member.Get("/activity")
		body = html.UnescapeString(body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Allowed by your standing approval for this tool in any conversation") ||
			!strings.Contains(body, "Allowed by policy — rule: allow without asking") || !strings.Contains(body, "Approved by Maya Member, with a standing approval") ||
			!strings.Contains(body, `action="`+revoke+`"`) || !strings.Contains(body, `href="/activity?grant=`+grant+`"`) {
			t.Fatalf("member's activity: %d\n%s", resp.StatusCode, body)
		}
		if !strings.Contains(body, `href="/activity" aria-current="page"`) {
			t.Fatal("the navigation does not mark Activity as the current page")
		}
	})

	t.Run("OtherMemberSeesNothing", func(t *testing.T) {
		_, body := other.Get("/activity?person=" + url.QueryEscape(dev.DemoMember.Subject))
		if strings.Contains(body, `data-testid="activity-row"`) || strings.Contains(body, revoke) {
			t.Fatalf("another member sees the member's calls:\n%s", body)
		}
	})

	t.Run("ErrOtherMembersGrant", func(t *testing.T) {
		if resp, _ := other.PostForm(revoke, url.Values{}); resp.StatusCode != http.StatusNotFound || !active() {
			t.Fatalf("another member's revoke: %d, grant active %v", resp.StatusCode, active())
		}
	})

	t.Run("AdminSeesButCannotRevoke", func(t *testing.T) {
		_, body := admin.Get("/activity?person=" + url.QueryEscape(dev.DemoMember.Subject))
		body = html.UnescapeString(body)
		if !strings.Contains(body, "Allowed by Maya Member’s standing approval") || strings.Contains(body, revoke) {
			t.Fatalf("admin's view of the member's calls:\n%s", body)
		}
		if resp, _ := admin.PostForm(revoke, url.Values{}); resp.StatusCode != http.StatusNotFound || !active() {
			t.Fatalf("admin's revoke of a member's grant: %d", resp.StatusCode)
		}
	})

	t.Run("ErrNoCSRF", func(t *testing.T) {
		resp, _ := l.Member.PostForm(revoke, url.Values{"csrf_token": {""}})
		if resp.StatusCode != http.StatusForbidden || !active() {
			t.Fatalf("revoke without the CSRF token: %d, grant active %v", resp.StatusCode, active())
		}
	})

	t.Run("ErrNotANumber", func(t *testing.T) {
		if resp, _ := l.Member.PostForm("/activity/grants/x1/revoke", url.Values{}); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("revoke of a grant that is not a number: %d", resp.StatusCode)
		}
	})

	t.Run("OK_KeepsFilters", func(t *testing.T) {
		resp, _ := l.Member.PostForm(revoke, url.Values{"tool": {"create_event"}, "outcome": {"allowed"}, "next": {"https://evil.example"}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/activity?outcome=allowed&tool=create_event" || active() {
			t.Fatalf("revoke: %d to %q, grant active %v", resp.StatusCode, resp.Header.Get("Location"), active())
		}
		if out := l.check(t, l.call("calendar", "create_event", `{"t":3}`)); out["decision"] != "pending" {
			t.Fatal("the revoked grant still allows:", out)
		}
		_, body := l.Member.Get("/activity?outcome=allowed&tool=create_event")
		if !strings.Contains(body, "Revoked.") || strings.Contains(body, revoke) {
			t.Fatalf("after the revoke:\n%s", body)
		}
		if resp, _ := l.Member.PostForm(revoke, url.Values{}); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("a second revoke: %d", resp.StatusCode)
		}
	})
}

// Each grant on the Auto-approve tab links to the calls it allowed, and
// that page lists those calls only.
func TestActivityGrantCalls(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	l.offerStanding(t, "calendar", "create_event")
	decide(l.Member, l.pending(t, l.call("calendar", "create_event", `{"t":1}`)), "always")
	for i := 2; i <= 3; i++ {
		l.check(t, l.call("calendar", "create_event", `{"t":`+string(rune('0'+i))+`}`))
	}
	l.check(t, l.call("mail", "search_messages", `{"q":"x"}`))
	var grant string
	if err := l.DB.Pool.QueryRow(ctx, `SELECT id::text FROM standing_grants`).Scan(&grant); err != nil {
		t.Fatal(err)
	}
	_, tab := l.Member.Get("/auto-approve")
	if !strings.Contains(tab, `href="/activity?grant=`+grant+`"`) {
		t.Fatalf("no link to the grant's calls:\n%s", tab)
	}
	_, body := l.Member.Get("/activity?grant=" + grant)
	if n := strings.Count(body, `data-testid="activity-row"`); n != 2 || !strings.Contains(body, `data-testid="grant-filter"`) {
		t.Fatalf("the grant's calls: %d rows\n%s", n, body)
	}
}
