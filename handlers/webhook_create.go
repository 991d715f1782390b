package handlers

import (
	"net/http"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// WebhookCreate adds an endpoint. Invalid input re-renders the form with
// what was typed (except the secret) and the messages.
func (h *Handler) WebhookCreate(c echo.Context) error {
	// The POST body only: the URL's query string is never read (it leaks
	// through logs and Referer, and can be planted in a link).
	req := c.Request()
	if err := req.ParseForm(); err != nil {
		return echo.ErrBadRequest
	}
	form := req.PostForm
	in := db.WebhookInput{URL: form.Get("url"), Secret: form.Get("secret"), Events: form["events"]}
	if p := in.Problems(); len(p) > 0 {
		return h.renderWebhooks(c, http.StatusUnprocessableEntity,
			views.WebhooksView{Form: views.WebhookForm{URL: in.URL, Events: in.Events}, Errors: p})
	}
	if _, err := h.DB.CreateWebhook(c.Request().Context(), in, *CurrentUser(c)); err != nil {
		return err
	}
	h.flash(c, "Webhook added. Send a test event to check that the receiver accepts it.", false)
	return redirect(c, "/admin/webhooks")
}
