package handlers

import (
	"io/fs"
	"net/http"

	"github.com/countersign/countersign/static"
	"github.com/labstack/echo/v4"
)

// ServiceWorker serves the push service worker from the root path, so
// that its scope covers every page (a worker's scope is at most its own
// path) and no Service-Worker-Allowed header is needed. It is a
// same-origin script file, allowed by the CSP's worker-src 'self'.
func (h *Handler) ServiceWorker(c echo.Context) error {
	b, err := fs.ReadFile(static.FS, static.ServiceWorker)
	if err != nil {
		return err
	}
	// Revalidated on every registration check, so a new release's worker
	// replaces the old one at once.
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "text/javascript; charset=utf-8", b)
}

// Manifest serves the web app manifest, so the inbox can be added to a
// phone's home screen.
func (h *Handler) Manifest(c echo.Context) error {
	b, err := fs.ReadFile(static.FS, static.Manifest)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.Blob(http.StatusOK, "application/manifest+json", b)
}
