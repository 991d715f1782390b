package handlers

import (
	"crypto/subtle"
	"net/http"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// Callback finishes the OIDC flow: the state must name a flow this browser
// started (it is used up whatever happens next), the code is exchanged with
// the PKCE verifier, the ID token is verified and its nonce compared; then
// the user is upserted and a session, under a fresh token, is created.
func (h *Handler) Callback(c echo.Context) error {
	ctx := c.Request().Context()
	q := c.QueryParams()
	var browser string
	if ck, err := c.Cookie(h.signInCookieName()); err == nil {
		browser = ck.Value
	}
	flow, err := h.DB.TakeSignInFlow(ctx, q.Get("state"), browser)
	if approval.KindOf(err) == approval.KindNotFound {
		return h.signInFailed(c, "unknown, expired, reused or foreign state", "This sign-in link has expired or was already used. Please sign in again.")
	} else if err != nil {
		return err
	}
	if e := q.Get("error"); e != "" {
		return h.signInFailed(c, "provider error: "+e, "The identity provider did not sign you in. Please try again.")
	}
	code := q.Get("code")
	if code == "" {
		return h.signInFailed(c, "callback without code", "The identity provider's answer was incomplete. Please sign in again.")
	}
	id, err := h.Auth.Exchange(ctx, code, flow.Verifier)
	if err != nil {
		return h.signInFailed(c, "code exchange or token verification: "+err.Error(), "Your sign-in could not be verified. Please sign in again.")
	}
	if subtle.ConstantTimeCompare([]byte(id.Nonce), []byte(flow.Nonce)) != 1 {
		return h.signInFailed(c, "nonce mismatch", "Your sign-in could not be verified. Please sign in again.")
	}
	user, err := h.DB.SignIn(ctx, db.User{
		Issuer: id.Issuer, Subject: id.Subject, Email: id.Email, EmailVerified: id.EmailVerified, Name: id.Name,
		IsAdmin: id.EmailVerified && h.Settings.AdminEmails(id.Email), Groups: id.Groups,
	})
	if err != nil {
		return err
	}
	// A fresh token at sign-in: a session fixed before sign-in is worthless.
	if err := h.Sessions.RenewToken(ctx); err != nil {
		return err
	}
	h.Sessions.Put(ctx, SessUserID, user.ID)
	h.Sessions.Put(ctx, SessCSRF, randomToken())
	h.Log.InfoContext(ctx, "sign-in", "user_id", user.ID, "subject", user.Subject, "admin", user.IsAdmin)
	return redirect(c, SafeNext(flow.Next))
}

func (h *Handler) signInFailed(c echo.Context, why, message string) error {
	h.Log.WarnContext(c.Request().Context(), "sign-in failed", "reason", why, "ip", c.RealIP())
	return Render(c, http.StatusBadRequest, views.ErrorPage(h.Page(c, "Sign-in failed", ""), http.StatusBadRequest, "Sign-in failed", message))
}
