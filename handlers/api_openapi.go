package handlers

import (
	"net/http"

	"github.com/countersign/countersign/docs"
	"github.com/labstack/echo/v4"
)

// APIOpenAPI serves the runtime API's OpenAPI 3.1 document as JSON. It
// needs no key: the contract is public, and a client generator must be able
// to fetch it before anyone has a key.
func (h *Handler) APIOpenAPI(c echo.Context) error {
	doc, err := docs.OpenAPIJSON()
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, doc)
}
