package handlers

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"
)

// loginFlow is one started sign-in, kept in the session until its callback.
type loginFlow struct {
	Nonce    string    `json:"nonce"`
	Verifier string    `json:"verifier"`
	Next     string    `json:"next"`
	Started  time.Time `json:"started"`
}

const (
	loginFlowTTL  = 10 * time.Minute
	maxLoginFlows = 5 // sign-ins started in several tabs at once
)

// SignInPage shows the signed-out landing page with the Sign in button.
func (h *Handler) SignInPage(c echo.Context) error {
	if CurrentUser(c) != nil {
		return redirect(c, "/")
	}
	next := safeNext(c.QueryParam("next"))
	loginURL := "/auth/login"
	if next != "/" {
		loginURL += "?next=" + queryEscape(next)
	}
	status := http.StatusOK
	if !h.Auth.Ready() {
		status = http.StatusServiceUnavailable
	}
	return Render(c, status, views.SignIn(h.Page(c, "Sign in", ""), loginURL, !h.Auth.Ready()))
}

// Login starts the OIDC authorization code flow with PKCE, state and nonce.
func (h *Handler) Login(c echo.Context) error {
	if !h.Auth.Ready() {
		return Render(c, http.StatusServiceUnavailable, views.SignIn(h.Page(c, "Sign in", ""), "/auth/login", true))
	}
	state, nonce := randomToken(), randomToken()
	verifier := oauth2.GenerateVerifier()
	flows := h.loginFlows(c)
	flows[state] = loginFlow{Nonce: nonce, Verifier: verifier, Next: safeNext(c.QueryParam("next")), Started: h.Now()}
	h.saveLoginFlows(c, flows)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Redirect(http.StatusSeeOther, h.Auth.AuthCodeURL(state, nonce, verifier))
}

// loginFlows returns the session's unexpired started sign-ins.
func (h *Handler) loginFlows(c echo.Context) map[string]loginFlow {
	flows := map[string]loginFlow{}
	if raw := h.Sessions.GetString(c.Request().Context(), SessFlows); raw != "" {
		_ = json.Unmarshal([]byte(raw), &flows)
	}
	for k, f := range flows {
		if h.Now().Sub(f.Started) > loginFlowTTL {
			delete(flows, k)
		}
	}
	for len(flows) >= maxLoginFlows { // drop the oldest
		oldest := ""
		for k, f := range flows {
			if oldest == "" || f.Started.Before(flows[oldest].Started) {
				oldest = k
			}
		}
		delete(flows, oldest)
	}
	return flows
}

func (h *Handler) saveLoginFlows(c echo.Context, flows map[string]loginFlow) {
	ctx := c.Request().Context()
	if len(flows) == 0 {
		h.Sessions.Remove(ctx, SessFlows)
		return
	}
	b, _ := json.Marshal(flows)
	h.Sessions.Put(ctx, SessFlows, string(b))
}

// safeNext keeps a post-sign-in destination only if it is a local path.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") ||
		strings.HasPrefix(next, "/auth/") {
		return "/"
	}
	return next
}

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}
