package handlers

import (
	"strconv"

	"github.com/labstack/echo/v4"
)

// PolicyGrantRevoke revokes one scoped grant of a tool, from the tool's
// policy page (admins only): the person is asked again on the next call.
func (h *Handler) PolicyGrantRevoke(c echo.Context) error {
	t, err := h.toolParam(c)
	if err != nil {
		return err
	}
	id, err := numberParam(c, "grant")
	if err != nil {
		return err
	}
	if err := h.DB.AdminRevokeScopedGrant(c.Request().Context(), *CurrentUser(c), t.ID, id); err != nil {
		return err
	}
	h.flash(c, "Revoked. Its owner will be asked again next time.", false)
	return redirect(c, "/admin/policies/"+strconv.FormatInt(t.ID, 10))
}
