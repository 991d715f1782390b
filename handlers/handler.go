// Package handlers has one file per screen action and per runtime API call.
// Handlers parse the request, call the db or approval packages, and render a
// view model; the web package wires them to routes and middleware.
package handlers

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"log/slog"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/alexedwards/scs/v2"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// Identity is what a verified ID token says about the person signing in.
type Identity struct {
	Issuer        string
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
	Nonce         string
	// Groups is the provider's groups claim (COUNTERSIGN_OIDC_GROUPS_CLAIM):
	// the person's teams from the provider.
	Groups []string
}

// Authenticator runs the OpenID Connect authorization code flow.
type Authenticator interface {
	// Ready reports whether the provider has been discovered.
	Ready() bool
	// AuthCodeURL is where to send the browser, with PKCE S256.
	AuthCodeURL(state, nonce, verifier string) string
	// Exchange redeems code with the PKCE verifier and verifies the ID token
	// (issuer, audience, expiry, signature). The caller compares the nonce.
	Exchange(ctx context.Context, code, verifier string) (Identity, error)
}

// Settings are the configuration values handlers need.
type Settings struct {
	AdminEmails          func(email string) bool
	ApprovalTimeout      time.Duration
	DeniedBlockThreshold int
	// BaseURL is the public URL (COUNTERSIGN_BASE_URL), without a trailing
	// slash; links handed to runtimes are built from it.
	BaseURL string
	// EmailConfigured says whether notification mails can be sent.
	EmailConfigured bool
	// VAPIDPublicKey gives the Web Push public key; nil: no push.
	VAPIDPublicKey func(ctx context.Context) (string, error)
	// AuditPublicKey checks the audit chain against the signed checkpoints
	// (COUNTERSIGN_AUDIT_SIGNING_KEY); nil: none are signed here.
	AuditPublicKey ed25519.PublicKey
}

// Handler holds the dependencies every handler shares.
type Handler struct {
	DB       *db.DB
	Sessions *scs.SessionManager
	Auth     Authenticator
	Settings Settings
	Log      *slog.Logger
	Hub      *db.Hub
	Now      func() time.Time
	// Condition evaluates policy conditions; nil makes every condition ask.
	Condition db.ConditionFunc
}

// Context keys set by the web package's middleware.
const (
	CtxUser   = "countersign.user"
	CtxAPIKey = "countersign.api_key"
	// CtxBearerKey is the bearer key of a request not yet authenticated:
	// the check authenticates it with its first read.
	CtxBearerKey = "countersign.bearer_key"
	CtxNonce     = "countersign.csp_nonce"
	CtxCSRF      = "countersign.csrf"
	// CtxSession is true once the session middleware has loaded a session.
	CtxSession = "countersign.session"
)

// Session keys.
const (
	SessUserID = "user_id"
	SessCSRF   = "csrf"
	SessFlash  = "flash"
)

// CurrentUser is the signed-in user, or nil.
func CurrentUser(c echo.Context) *db.User {
	u, _ := c.Get(CtxUser).(*db.User)
	return u
}

// CurrentAPIKey is the runtime key that authenticated this API request.
func CurrentAPIKey(c echo.Context) *db.APIKey {
	k, _ := c.Get(CtxAPIKey).(*db.APIKey)
	return k
}

// Page builds the layout's view model for the current request and takes
// the pending flash message.
func (h *Handler) Page(c echo.Context, title, active string) views.Page {
	p := views.Page{Title: title, Active: active}
	p.CSRFToken, _ = c.Get(CtxCSRF).(string)
	if u := CurrentUser(c); u != nil {
		p.User = &views.UserView{Name: u.DisplayName(), Email: u.Email, IsAdmin: u.IsAdmin}
		// A page without the count is still a page (the stream sends it),
		// so a slow or failing count neither delays nor fails the page.
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		p.Pending, _ = h.DB.PendingCountFor(ctx, u.Subject)
		cancel()
	}
	if loaded, _ := c.Get(CtxSession).(bool); loaded {
		ctx := c.Request().Context()
		if msg := h.Sessions.PopString(ctx, SessFlash); msg != "" {
			p.Flash = &views.Flash{Message: msg[1:], Bad: msg[0] == '!'}
		}
	}
	return p
}

// flash stores a one-time message for the next page.
func (h *Handler) flash(c echo.Context, msg string, bad bool) {
	prefix := "+"
	if bad {
		prefix = "!"
	}
	h.Sessions.Put(c.Request().Context(), SessFlash, prefix+msg)
}

// Render writes component with status, rendering into a buffer first so that
// a template failure becomes a clean error page instead of half a page.
func Render(c echo.Context, status int, component templ.Component) error {
	ctx := c.Request().Context()
	if nonce, ok := c.Get(CtxNonce).(string); ok {
		ctx = templ.WithNonce(ctx, nonce)
	}
	var buf bytes.Buffer
	if err := component.Render(ctx, &buf); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// isHTMX reports whether the request came from htmx and wants a fragment.
func isHTMX(c echo.Context) bool {
	return c.Request().Header.Get("HX-Request") == "true"
}

// redirect answers a successful form post: 303 to target.
func redirect(c echo.Context, target string) error {
	return c.Redirect(http.StatusSeeOther, target)
}
