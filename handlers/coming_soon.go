package handlers

import (
	"net/http"

	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// ComingSoon renders a screen whose feature is not built yet, saying so
// plainly instead of showing a dead end.
func (h *Handler) ComingSoon(title, active, what string) echo.HandlerFunc {
	return func(c echo.Context) error {
		return Render(c, http.StatusOK, views.Placeholder(h.Page(c, title, active), what))
	}
}
