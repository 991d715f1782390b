package handlers

import (
	"net/http"

	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// APIKeysList shows the runtime keys.
func (h *Handler) APIKeysList(c echo.Context) error {
	return h.renderAPIKeys(c, http.StatusOK, views.APIKeysView{})
}

func (h *Handler) renderAPIKeys(c echo.Context, status int, v views.APIKeysView) error {
	keys, err := h.DB.ListAPIKeys(c.Request().Context())
	if err != nil {
		return err
	}
	waits, err := h.DB.WaitingForFirstTimeUsers(c.Request().Context())
	if err != nil {
		return err
	}
	for _, w := range waits {
		v.FirstTimeWaits = append(v.FirstTimeWaits, views.FirstTimeWait{User: w.User, KeyName: w.KeyName, Items: w.Items})
	}
	v.Page, v.Now = h.Page(c, "API keys", "api-keys"), h.Now()
	asked := v.Revoke
	v.Revoke = nil
	for _, k := range keys {
		row := views.APIKeyRow{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Creator: k.Creator,
			CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, Revoked: k.RevokedAt != nil, FirstTimeUsers: k.AllowFirstTimeUsers}
		v.Keys = append(v.Keys, row)
		if asked != nil && asked.ID == k.ID && !row.Revoked {
			v.Revoke = &row
		}
	}
	if asked != nil && v.Revoke == nil {
		return echo.ErrNotFound // no such key, or already revoked
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return Render(c, status, views.APIKeys(v))
}
