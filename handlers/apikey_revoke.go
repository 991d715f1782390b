package handlers

import (
	"strconv"

	"github.com/labstack/echo/v4"
)

// APIKeyRevoke revokes a key; requests with it fail from then on.
func (h *Handler) APIKeyRevoke(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return echo.ErrNotFound
	}
	if err := h.DB.RevokeAPIKey(c.Request().Context(), id, *CurrentUser(c)); err != nil {
		return err
	}
	h.flash(c, "Key revoked. Runtimes using it are refused from now on.", false)
	return redirect(c, "/admin/api-keys")
}
