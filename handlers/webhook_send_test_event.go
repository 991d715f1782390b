package handlers

import (
	"github.com/labstack/echo/v4"
)

// WebhookSendTestEvent queues a test event for one endpoint; its attempt
// appears under "Recent attempts".
func (h *Handler) WebhookSendTestEvent(c echo.Context) error {
	id, err := numberParam(c, "id")
	if err != nil {
		return echo.ErrNotFound
	}
	if err := h.DB.QueueTestEvent(c.Request().Context(), id, h.Now()); err != nil {
		return err
	}
	h.flash(c, "Test event queued. Its answer appears under Recent attempts.", false)
	return redirect(c, "/admin/webhooks")
}
