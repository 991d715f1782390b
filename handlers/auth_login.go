package handlers

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"
)

// signInFlowTTL is how long a started sign-in may take at the identity
// provider before its state is worthless.
const signInFlowTTL = 10 * time.Minute

// SignInPage shows the signed-out landing page with the Sign in button.
func (h *Handler) SignInPage(c echo.Context) error {
	if CurrentUser(c) != nil {
		return redirect(c, "/")
	}
	next := SafeNext(c.QueryParam("next"))
	loginURL := "/auth/login"
	if next != "/" {
		loginURL += "?next=" + url.QueryEscape(next)
	}
	status := http.StatusOK
	if !h.Auth.Ready() {
		status = http.StatusServiceUnavailable
	}
	return Render(c, status, views.SignIn(h.Page(c, "Sign in", ""), loginURL, !h.Auth.Ready()))
}

// Login starts the OIDC authorization code flow with PKCE, state and nonce.
// Nothing goes into the session: the flow is stored on its own, expires in
// minutes and is bound to this browser by a short-lived cookie, so visits
// that never come back from the identity provider leave no session behind.
func (h *Handler) Login(c echo.Context) error {
	if !h.Auth.Ready() {
		return Render(c, http.StatusServiceUnavailable, views.SignIn(h.Page(c, "Sign in", ""), "/auth/login", true))
	}
	state, nonce := randomToken(), randomToken()
	verifier := oauth2.GenerateVerifier()
	browser := h.signInBrowserKey(c)
	flow := db.SignInFlow{Nonce: nonce, Verifier: verifier, Next: SafeNext(c.QueryParam("next"))}
	if err := h.DB.StartSignInFlow(c.Request().Context(), state, browser, flow, signInFlowTTL); err != nil {
		return err
	}
	h.setSignInCookie(c, browser)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Redirect(http.StatusSeeOther, h.Auth.AuthCodeURL(state, nonce, verifier))
}

// signInCookieName names the cookie binding unfinished sign-ins to a
// browser; over https it carries the __Host- prefix like the session's.
func (h *Handler) signInCookieName() string {
	if h.Sessions.Cookie.Secure {
		return "__Host-countersign_signin"
	}
	return "countersign_signin"
}

// signInBrowserKey is the browser's existing binding key, so sign-ins
// started in several tabs all stay valid, or a fresh one.
func (h *Handler) signInBrowserKey(c echo.Context) string {
	if ck, err := c.Cookie(h.signInCookieName()); err == nil && len(ck.Value) == 43 {
		return ck.Value
	}
	return randomToken()
}

func (h *Handler) setSignInCookie(c echo.Context, key string) {
	c.SetCookie(&http.Cookie{
		Name: h.signInCookieName(), Value: key, Path: "/", MaxAge: int(signInFlowTTL / time.Second),
		HttpOnly: true, Secure: h.Sessions.Cookie.Secure,
		SameSite: http.SameSiteLaxMode, // sent on the identity provider's redirect back
	})
}

// SafeNext returns next, parsed and rebuilt, if it is a path on this site,
// and "/" otherwise. It is the one check for every post-sign-in destination.
// Browsers drop tabs and newlines from URLs and treat "\" like "/", so
// "/\t/evil.example" would leave the site: next must be printable ASCII
// without spaces, have no scheme, host or user, and its decoded path must
// start with a single "/", hold no backslash, control, space or invisible
// character, no "//" and no dot segments.
func SafeNext(next string) string {
	const home = "/"
	if next == "" || len(next) > 2048 || !strings.HasPrefix(next, "/") {
		return home
	}
	for i := 0; i < len(next); i++ {
		if b := next[i]; b <= ' ' || b >= 0x7f || b == '\\' {
			return home
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return home
	}
	p := u.Path
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") || strings.HasPrefix(p, "/auth/") || !utf8.ValidString(p) {
		return home
	}
	for _, r := range p {
		if r == '\\' || r == ' ' || !unicode.IsPrint(r) {
			return home
		}
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return home
		}
	}
	out := url.URL{Path: p, RawPath: u.RawPath, RawQuery: u.RawQuery, Fragment: u.Fragment, RawFragment: u.RawFragment}
	if s := out.String(); strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		return s
	}
	return home
}

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}
