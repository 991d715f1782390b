package handlers

import (
	"github.com/labstack/echo/v4"
)

// Logout destroys the server-side session (an old cookie replayed later is
// signed out) and starts a fresh one under a new token for the flash.
func (h *Handler) Logout(c echo.Context) error {
	ctx := c.Request().Context()
	if u := CurrentUser(c); u != nil {
		if err := h.DB.RecordSignOut(ctx, *u); err != nil {
			return err
		}
	}
	if err := h.Sessions.Destroy(ctx); err != nil {
		return err
	}
	if err := h.Sessions.RenewToken(ctx); err != nil {
		return err
	}
	h.flash(c, "You are signed out.", false)
	return redirect(c, "/signin")
}
