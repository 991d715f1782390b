package handlers

import (
	"net/http"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// APIKeyCreate makes a key and shows it once, on this response only (it is
// never stored in the session or a redirect).
func (h *Handler) APIKeyCreate(c echo.Context) error {
	name := c.Request().PostFormValue("name")
	key, k, err := h.DB.CreateAPIKey(c.Request().Context(), name, CurrentUser(c))
	if e := approval.AsError(err); e != nil && e.Kind == approval.KindUnprocessable {
		return h.renderAPIKeys(c, http.StatusUnprocessableEntity, views.APIKeysView{Name: name, Error: e.Message})
	}
	if err != nil {
		return err
	}
	return h.renderAPIKeys(c, http.StatusOK, views.APIKeysView{NewKey: key, NewName: k.Name})
}
