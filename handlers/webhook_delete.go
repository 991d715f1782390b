package handlers

import (
	"github.com/labstack/echo/v4"
)

// WebhookDelete removes an endpoint; nothing more is sent to it.
func (h *Handler) WebhookDelete(c echo.Context) error {
	id, err := numberParam(c, "id")
	if err != nil {
		return echo.ErrNotFound
	}
	if err := h.DB.DeleteWebhook(c.Request().Context(), id, *CurrentUser(c)); err != nil {
		return err
	}
	h.flash(c, "Webhook removed.", false)
	return redirect(c, "/admin/webhooks")
}
