package handlers

import (
	"net/http"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// WebhooksList shows the webhook endpoints and their recent attempts.
func (h *Handler) WebhooksList(c echo.Context) error {
	return h.renderWebhooks(c, http.StatusOK, views.WebhooksView{})
}

func (h *Handler) renderWebhooks(c echo.Context, status int, v views.WebhooksView) error {
	ctx := c.Request().Context()
	hooks, err := h.DB.ListWebhooks(ctx)
	if err != nil {
		return err
	}
	attempts, err := h.DB.RecentWebhookAttempts(ctx, 50)
	if err != nil {
		return err
	}
	v.Page, v.Now, v.EventKinds = h.Page(c, "Webhooks", "webhooks"), h.Now(), db.EventKinds
	for _, w := range hooks {
		v.Hooks = append(v.Hooks, views.WebhookRow{ID: w.ID, URL: db.MaskedURL(w.URL), SecretHint: w.SecretHint(),
			Events: w.Events, CreatedAt: w.CreatedAt})
	}
	for _, a := range attempts {
		v.Attempts = append(v.Attempts, views.WebhookAttemptRow{WebhookURL: db.MaskedURL(a.URL), Event: a.Kind, State: a.State,
			At: a.At, StatusCode: a.StatusCode, Outcome: a.Outcome})
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return Render(c, status, views.Webhooks(v))
}
