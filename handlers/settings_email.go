package handlers

import (
	"github.com/labstack/echo/v4"
)

// SettingsEmail turns the person's notification mails on or off.
func (h *Handler) SettingsEmail(c echo.Context) error {
	var on bool
	// The POST body only, never the URL's query string.
	switch c.Request().PostFormValue("enabled") {
	case "on":
		on = true
	case "off":
	default:
		return echo.ErrBadRequest
	}
	if err := h.DB.SetEmailEnabled(c.Request().Context(), CurrentUser(c).Subject, on); err != nil {
		return err
	}
	msg := "Email notifications are off."
	if on {
		msg = "Email notifications are on."
	}
	h.flash(c, msg, false)
	return redirect(c, "/settings")
}
