package handlers

import (
	"github.com/labstack/echo/v4"
)

// ActivityGrantRevoke revokes, from a row of the Activity page, the
// standing grant that allowed a call: the very next call asks again. Only
// the grant's owner may: anyone else's grant is not found (404, not 403:
// don't confirm that it exists). The page comes back with the filters it
// had.
func (h *Handler) ActivityGrantRevoke(c echo.Context) error {
	id, err := numberParam(c, "grant")
	if err != nil {
		return echo.ErrNotFound
	}
	user := CurrentUser(c)
	if err := h.DB.RevokeGrant(c.Request().Context(), *user, id); err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return echo.ErrBadRequest
	}
	f, _ := activityFilter(form, user.IsAdmin)
	h.flash(c, "Revoked. Calls it allowed will ask you again.", false)
	return redirect(c, activityURL(f, 0))
}
