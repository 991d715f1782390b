package handlers

import (
	"github.com/labstack/echo/v4"
)

// APIKeyFirstTimeUsers switches whether a key's checks may leave items
// waiting for people who have never signed in (allow=yes) or are refused
// with unknown_user (allow=no, the default).
func (h *Handler) APIKeyFirstTimeUsers(c echo.Context) error {
	id, err := numberParam(c, "id")
	if err != nil {
		return err
	}
	var allow bool
	switch c.Request().PostFormValue("allow") {
	case "yes":
		allow = true
	case "no":
	default:
		return invalid("allow must be yes or no.")
	}
	if err := h.DB.SetAPIKeyFirstTimeUsers(c.Request().Context(), CurrentUser(c).Actor(), id, allow); err != nil {
		return err
	}
	msg := "Calls for people who have never signed in are refused for this key."
	if allow {
		msg = "Items may now wait for people who have never signed in, for this key."
	}
	h.flash(c, msg, false)
	return redirect(c, "/admin/api-keys")
}
