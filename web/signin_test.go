package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/web"
)

// signInFrom goes through the real OIDC flow starting at loginPath and
// returns where the callback sends the browser.
func signInFrom(t *testing.T, b *testenv.Browser, loginPath string) string {
	t.Helper()
	resp, _ := b.Get(loginPath)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	authURL, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp, body := b.Get(authorize(t, b, authURL, "member"))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback: %d %s", resp.StatusCode, body)
	}
	return resp.Header.Get("Location")
}

func TestSignInNextStaysOnSite(t *testing.T) {
	e := testenv.NewEnv(t)
	attacks := []string{
		"/%09/evil.example/x", "/%0a/evil.example", "//evil.example", "/%5Cevil.example", "%5C%5Cevil.example",
		"https://evil.example", "/%252F%252Fevil.example", "%2F%2Fevil.example", "/%E3%80%80/evil.example",
		"javascript:alert(1)",
	}
	for _, raw := range attacks {
		t.Run("Err"+raw, func(t *testing.T) {
			if got := signInFrom(t, browser(t, e), "/auth/login?next="+raw); got != "/" {
				t.Fatalf("next=%s: sent to %q, want /", raw, got)
			}
		})
	}
	t.Run("ErrThroughSignInPage", func(t *testing.T) {
		b := browser(t, e)
		resp, body := b.Get("/signin?next=/%09/evil.example/x")
		if resp.StatusCode != http.StatusOK || strings.Contains(body, "evil.example") || !strings.Contains(body, `href="/auth/login"`) {
			t.Fatalf("sign-in page carries the attack value on: %d", resp.StatusCode)
		}
	})
	t.Run("OKLocalPath", func(t *testing.T) {
		if got := signInFrom(t, browser(t, e), "/auth/login?next="+url.QueryEscape("/playbooks?x=1")); got != "/playbooks?x=1" {
			t.Fatalf("sent to %q", got)
		}
	})
	t.Run("OKFromSignedOutPage", func(t *testing.T) {
		b := browser(t, e)
		resp, _ := b.Get("/auto-approve")
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/signin?next=") {
			t.Fatalf("signed-out page: %d %s", resp.StatusCode, loc)
		}
		next, _ := url.Parse(loc)
		if got := signInFrom(t, b, "/auth/login?next="+url.QueryEscape(next.Query().Get("next"))); got != "/auto-approve" {
			t.Fatalf("sent to %q", got)
		}
	})
}

// browser is a signed-out browser whose failures belong to t (a subtest).
func browser(t *testing.T, e *testenv.Env) *testenv.Browser {
	b := e.NewBrowser()
	b.T = t
	return b
}

func countRows(t *testing.T, e *testenv.Env, table string) int {
	t.Helper()
	var n int
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Starting a sign-in keeps no server session: the unfinished flow is kept
// on its own for minutes, and the session is created once someone signed in.
func TestSignInCreatesSessionOnlyWhenDone(t *testing.T) {
	e := testenv.NewEnv(t)
	for range 5 {
		b := e.NewBrowser()
		if resp, _ := b.Get("/auth/login"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("login: %d", resp.StatusCode)
		}
		b.Get("/signin")
		b.Get("/")
		if cookieValue(b, "countersign_session") != "" {
			t.Fatal("session cookie set before sign-in")
		}
	}
	if n := countRows(t, e, "sessions"); n != 0 {
		t.Fatalf("%d session rows after sign-ins that were only started", n)
	}
	if n := countRows(t, e, "oidc_flows"); n != 5 {
		t.Fatalf("%d unfinished sign-ins stored, want 5", n)
	}
	var withinMinutes bool
	if err := e.DB.Pool.QueryRow(context.Background(),
		`SELECT bool_and(expires_at - created_at <= interval '10 minutes') FROM oidc_flows`).Scan(&withinMinutes); err != nil || !withinMinutes {
		t.Fatalf("unfinished sign-ins kept longer than 10 minutes (%v)", err)
	}
	b := e.NewBrowser()
	b.SignIn("member")
	if r, _ := b.Get("/"); r.StatusCode != http.StatusOK {
		t.Fatalf("inbox after sign-in: %d", r.StatusCode)
	}
	if n := countRows(t, e, "sessions"); n != 1 {
		t.Fatalf("%d session rows after one sign-in", n)
	}
	if n := countRows(t, e, "oidc_flows"); n != 5 {
		t.Fatalf("the finished sign-in's flow was not used up: %d rows", n)
	}
}

func TestSignInFlowExpires(t *testing.T) {
	e := testenv.NewEnv(t)
	ctx := context.Background()
	b := e.NewBrowser()
	cb := authorize(t, b, startLogin(t, b), "member")
	if _, err := e.DB.Pool.Exec(ctx, `UPDATE oidc_flows SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if resp, _ := b.Get(cb); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("callback of an expired sign-in: %d", resp.StatusCode)
	}
	if r, _ := b.Get("/"); r.StatusCode != http.StatusSeeOther {
		t.Fatal("signed in through an expired flow")
	}

	// The sweep removes unfinished sign-ins past their expiry, and only those.
	startLogin(t, b)
	startLogin(t, e.NewBrowser())
	if _, err := e.DB.Pool.Exec(ctx, `UPDATE oidc_flows SET expires_at = now() - interval '1 second'
		WHERE state_hash = (SELECT state_hash FROM oidc_flows ORDER BY created_at LIMIT 1)`); err != nil {
		t.Fatal(err)
	}
	n, err := e.DB.SweepSignInFlows(ctx)
	if err != nil || n != 1 {
		t.Fatalf("swept %d (%v), want 1", n, err)
	}
	if left := countRows(t, e, "oidc_flows"); left != 1 {
		t.Fatalf("%d flows left, want the unexpired one", left)
	}
}

// A callback only completes in the browser that started the sign-in: an
// attacker cannot sign a victim into the attacker's account (login CSRF).
func TestSignInCallbackBoundToBrowser(t *testing.T) {
	e := testenv.NewEnv(t)
	attacker := e.NewBrowser()
	cb := authorize(t, attacker, startLogin(t, attacker), "member")
	victim := e.NewBrowser()
	if resp, _ := victim.Get(cb); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("callback in a browser that did not start the sign-in: %d", resp.StatusCode)
	}
	if r, _ := victim.Get("/"); r.StatusCode != http.StatusSeeOther {
		t.Fatal("victim signed in")
	}
	// Single use: the state is spent even though the attempt failed.
	if resp, _ := attacker.Get(cb); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("state reused after a failed callback: %d", resp.StatusCode)
	}
	// Two sign-ins started in two tabs of one browser both work.
	b := e.NewBrowser()
	first, second := startLogin(t, b), startLogin(t, b)
	cb1, cb2 := authorize(t, b, first, "member"), authorize(t, b, second, "member")
	if resp, _ := b.Get(cb2); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("second tab: %d", resp.StatusCode)
	}
	if resp, _ := b.Get(cb1); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first tab: %d", resp.StatusCode)
	}
}

// The admin role follows COUNTERSIGN_ADMIN_EMAILS as configured now. A
// second server on the same database with another list stands for the
// configuration changed (restart, or another instance already updated).
func TestAdminFollowsConfiguredList(t *testing.T) {
	e := testenv.NewEnv(t)
	admin := e.NewBrowser()
	admin.SignIn("admin")
	member := e.NewBrowser()
	member.SignIn("member")
	if resp, _ := admin.Get("/admin/policies"); resp.StatusCode != http.StatusOK {
		t.Fatalf("admin before the change: %d", resp.StatusCode)
	}

	changed := testenv.NewEnvOn(t, e.DBURL, e.IdP, func(c *web.Config) { c.AdminEmails = []string{dev.DemoMember.Email} })
	on := func(t *testing.T, b *testenv.Browser) *testenv.Browser {
		return &testenv.Browser{T: t, Env: changed, Client: b.Client}
	}

	t.Run("ErrRemovedFromList", func(t *testing.T) {
		b := on(t, admin)
		if resp, _ := b.Get("/admin/policies"); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("admin page after removal from the list: %d", resp.StatusCode)
		}
		resp, body := b.Get("/")
		if resp.StatusCode != http.StatusOK || strings.Contains(body, `href="/admin/`) {
			t.Fatalf("inbox after removal: %d, admin links shown: %v", resp.StatusCode, strings.Contains(body, `href="/admin/`))
		}
		form := url.Values{"name": {"k"}, "csrf_token": {b.CSRF()}}
		if resp, _ := b.PostForm("/admin/api-keys", form); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("admin post after removal: %d", resp.StatusCode)
		}
	})
	t.Run("OKAddedToList", func(t *testing.T) {
		if resp, _ := on(t, member).Get("/admin/policies"); resp.StatusCode != http.StatusOK {
			t.Fatalf("admin page after being listed: %d", resp.StatusCode)
		}
	})
	t.Run("ErrUnverifiedStillNoAdmin", func(t *testing.T) {
		changed.IdP.SetEmailVerified("member", false)
		defer changed.IdP.SetEmailVerified("member", true)
		b := browser(t, changed)
		b.SignIn("member")
		if resp, _ := b.Get("/admin/policies"); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("admin page for a listed but unverified email: %d", resp.StatusCode)
		}
	})
}
