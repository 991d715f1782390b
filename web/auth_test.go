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

func cookieValue(b *testenv.Browser, name string) string {
	u, _ := url.Parse(b.Env.BaseURL)
	for _, c := range b.Client.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// startLogin begins a sign-in and returns the provider's authorization URL.
func startLogin(t *testing.T, b *testenv.Browser) *url.URL {
	t.Helper()
	resp, _ := b.Get("/auth/login")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login status %d", resp.StatusCode)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// authorize picks a demo user on the provider and returns the callback URL.
func authorize(t *testing.T, b *testenv.Browser, authURL *url.URL, user string) string {
	t.Helper()
	q := authURL.Query()
	q.Set("demo_user", user)
	authURL.RawQuery = q.Encode()
	resp, _ := b.Get(authURL.String())
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize status %d", resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

func TestSignIn(t *testing.T) {
	e := testenv.NewEnv(t)

	t.Run("OK", func(t *testing.T) {
		b := e.NewBrowser()
		resp, _ := b.Get("/")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/signin") {
			t.Fatalf("signed-out inbox: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		authURL := startLogin(t, b)
		q := authURL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" {
			t.Fatalf("authorization request lacks PKCE/nonce/state: %s", authURL)
		}
		if before := cookieValue(b, "countersign_session"); before != "" {
			t.Fatalf("session created before sign-in: %q", before)
		}
		cb := authorize(t, b, authURL, "member")
		resp, _ = b.Get(cb)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
			t.Fatalf("callback: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		if cookieValue(b, "countersign_session") == "" {
			t.Fatal("no session after sign-in")
		}
		resp, body := b.Get("/")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, dev.DemoMember.Name) {
			t.Fatalf("inbox after sign-in: %d", resp.StatusCode)
		}
		u := e.User(dev.DemoMember.Subject)
		if u.Email != dev.DemoMember.Email || !u.EmailVerified || u.IsAdmin {
			t.Fatalf("user row: %+v", u)
		}
		if u.Issuer != e.IdP.Issuer() {
			t.Fatalf("issuer %q", u.Issuer)
		}
	})

	t.Run("OKTokenRenewedAtSignIn", func(t *testing.T) {
		// A browser that already holds a session (here the sign-out's flash)
		// gets a new token at sign-in: a session fixed before is worthless.
		b := e.NewBrowser()
		b.SignIn("member")
		if resp, _ := b.PostForm("/auth/logout", url.Values{}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %d", resp.StatusCode)
		}
		before := cookieValue(b, "countersign_session")
		b.SignIn("member")
		if after := cookieValue(b, "countersign_session"); before == "" || after == "" || before == after {
			t.Fatalf("session token not renewed at sign-in: before %q after %q", before, after)
		}
	})

	t.Run("ErrWrongState", func(t *testing.T) {
		b := e.NewBrowser()
		authURL := startLogin(t, b)
		cb, _ := url.Parse(authorize(t, b, authURL, "member"))
		q := cb.Query()
		q.Set("state", "forged-state")
		cb.RawQuery = q.Encode()
		resp, body := b.Get(cb.String())
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Sign-in failed") {
			t.Fatalf("wrong state accepted: %d", resp.StatusCode)
		}
		if r, _ := b.Get("/"); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("signed in despite wrong state")
		}
	})

	t.Run("ErrReplayedCallback", func(t *testing.T) {
		b := e.NewBrowser()
		cb := authorize(t, b, startLogin(t, b), "member")
		if resp, _ := b.Get(cb); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("first callback: %d", resp.StatusCode)
		}
		resp, _ := b.Get(cb)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("replayed callback: %d", resp.StatusCode)
		}
		// A replay in another browser (stolen callback URL) fails too.
		other := e.NewBrowser()
		if resp, _ := other.Get(cb); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("callback in another browser: %d", resp.StatusCode)
		}
	})

	t.Run("ErrNonceMismatch", func(t *testing.T) {
		b := e.NewBrowser()
		authURL := startLogin(t, b)
		q := authURL.Query()
		q.Set("nonce", "not-the-session-nonce")
		authURL.RawQuery = q.Encode()
		resp, _ := b.Get(authorize(t, b, authURL, "member"))
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("nonce mismatch accepted: %d", resp.StatusCode)
		}
		if !strings.Contains(e.Logs(), "nonce mismatch") {
			t.Fatal("nonce mismatch not logged")
		}
		if r, _ := b.Get("/"); r.StatusCode != http.StatusSeeOther {
			t.Fatal("signed in despite the nonce mismatch")
		}
	})

	t.Run("ErrPKCEVerifier", func(t *testing.T) {
		// The provider checks the verifier: an authorization made with
		// another challenge cannot be redeemed with this session's verifier.
		b := e.NewBrowser()
		authURL := startLogin(t, b)
		q := authURL.Query()
		q.Set("code_challenge", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
		authURL.RawQuery = q.Encode()
		resp, _ := b.Get(authorize(t, b, authURL, "member"))
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("exchange without the right verifier accepted: %d", resp.StatusCode)
		}
		if !strings.Contains(e.Logs(), "invalid_grant") {
			t.Fatal("refused, but not by the provider's verifier check")
		}
		if r, _ := b.Get("/"); r.StatusCode != http.StatusSeeOther {
			t.Fatal("signed in without the right verifier")
		}
	})

	t.Run("AdminOnlyForListedVerifiedEmail", func(t *testing.T) {
		admin := e.NewBrowser()
		admin.SignIn("admin")
		if resp, _ := admin.Get("/admin/api-keys"); resp.StatusCode != http.StatusOK {
			t.Fatalf("admin page for admin: %d", resp.StatusCode)
		}
		member := e.NewBrowser()
		member.SignIn("member")
		if resp, _ := member.Get("/admin/api-keys"); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("admin page for member: %d", resp.StatusCode)
		}
		// Listed email, but not verified: no admin role.
		e.IdP.AddUser(dev.DemoUser{Key: "unverified", Subject: "unverified-1", Email: dev.DemoAdmin.Email, Name: "Mallory"})
		setUnverified(e.IdP, "unverified")
		m := e.NewBrowser()
		m.SignIn("unverified")
		if resp, _ := m.Get("/admin/api-keys"); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("admin page for unverified email: %d", resp.StatusCode)
		}
		if u := e.User("unverified-1"); u.IsAdmin || u.EmailVerified {
			t.Fatalf("unverified user got admin: %+v", u)
		}
	})
}

func setUnverified(idp *dev.IdP, key string) { idp.SetEmailVerified(key, false) }

func TestSignOut(t *testing.T) {
	e := testenv.NewEnv(t)
	b := e.NewBrowser()
	b.SignIn("member")
	old := cookieValue(b, "countersign_session")
	resp, _ := b.PostForm("/auth/logout", url.Values{})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if now := cookieValue(b, "countersign_session"); now == old {
		t.Fatal("session token not renewed at sign-out")
	}
	if r, _ := b.Get("/"); r.StatusCode != http.StatusSeeOther {
		t.Fatal("still signed in after sign-out")
	}
	// Replaying the old cookie: the server-side session is gone.
	replay := e.NewBrowser()
	u, _ := url.Parse(e.BaseURL)
	replay.Client.Jar.SetCookies(u, []*http.Cookie{{Name: "countersign_session", Value: old}})
	if r, _ := replay.Get("/"); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("old cookie still signed in: %d", r.StatusCode)
	}
	var n int
	_ = e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE action = 'sign-in'`).Scan(&n)
	if n != 1 {
		t.Fatalf("sign-in audit lines: %d", n)
	}
}

func TestSessionCookieFlags(t *testing.T) {
	t.Run("HTTP", func(t *testing.T) {
		e := testenv.NewEnv(t)
		b := e.NewBrowser()
		resp, _ := b.Get("/auth/login")
		c := findCookie(resp, "countersign_signin")
		if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure || c.MaxAge <= 0 || c.MaxAge > 600 {
			t.Fatalf("sign-in cookie flags: %+v", c)
		}
		authURL, _ := url.Parse(resp.Header.Get("Location"))
		resp, _ = b.Get(authorize(t, b, authURL, "member"))
		c = findCookie(resp, "countersign_session")
		if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure {
			t.Fatalf("session cookie flags: %+v", c)
		}
	})
	t.Run("HTTPS", func(t *testing.T) {
		e := testenv.NewEnv(t, func(c *web.Config) { c.BaseURL, _ = url.Parse("https://countersign.example.com") })
		roundTrip := func(target string, cookies ...*http.Cookie) *http.Response {
			req, _ := http.NewRequest(http.MethodGet, target, nil)
			for _, c := range cookies {
				req.AddCookie(c)
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		resp := roundTrip(e.BaseURL + "/auth/login")
		flow := findCookie(resp, "__Host-countersign_signin")
		if flow == nil || !flow.Secure || !flow.HttpOnly || flow.Path != "/" || flow.Domain != "" {
			t.Fatalf("https sign-in cookie: %+v", flow)
		}
		if resp.Header.Get("Strict-Transport-Security") == "" {
			t.Fatal("no HSTS on https")
		}
		// Finish the sign-in against the plain listener behind the https name.
		authURL, _ := url.Parse(resp.Header.Get("Location"))
		q := authURL.Query()
		q.Set("demo_user", "member")
		authURL.RawQuery = q.Encode()
		cb, _ := url.Parse(roundTrip(authURL.String()).Header.Get("Location"))
		base, _ := url.Parse(e.BaseURL)
		cb.Scheme, cb.Host = base.Scheme, base.Host
		resp = roundTrip(cb.String(), &http.Cookie{Name: flow.Name, Value: flow.Value})
		c := findCookie(resp, "__Host-countersign_session")
		if resp.StatusCode != http.StatusSeeOther || c == nil || !c.Secure || !c.HttpOnly || c.Path != "/" || c.Domain != "" {
			t.Fatalf("https session cookie: %d %+v", resp.StatusCode, c)
		}
	})
}

func findCookie(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}
