package handlers

import (
	"net/http"

	"github.com/countersign/countersign/docs"
	"github.com/labstack/echo/v4"
)

// APIOpenAPI serves the runtime API's OpenAPI 3.1 document as JSON (GET
// and HEAD). It needs no key: the contract is public, and a client
// generator must be able to fetch it before anyone has a key. Its servers
// name this deployment when COUNTERSIGN_BASE_URL is set. Like every API
// answer it is no-store (set by the route).
func (h *Handler) APIOpenAPI(c echo.Context) error {
	doc, err := docs.OpenAPIJSONFor(h.Settings.BaseURL)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, doc)
}
