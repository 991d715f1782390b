package handlers

import (
	"net/http"

	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// APIKeyRevoke revokes a key; requests with it fail from then on. The first
// post (without confirm=yes) only asks: it shows the keys page with a
// dialog that says the runtimes using the key will be refused.
func (h *Handler) APIKeyRevoke(c echo.Context) error {
	id, err := numberParam(c, "id")
	if err != nil {
		return echo.ErrNotFound
	}
	if c.Request().PostFormValue("confirm") != "yes" {
		return h.renderAPIKeys(c, http.StatusOK, views.APIKeysView{Revoke: &views.APIKeyRow{ID: id}})
	}
	if err := h.DB.RevokeAPIKey(c.Request().Context(), id, *CurrentUser(c)); err != nil {
		return err
	}
	h.flash(c, "Key revoked. Runtimes using it are refused from now on.", false)
	return redirect(c, "/admin/api-keys")
}
