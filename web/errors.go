package web

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// statusOf maps a domain error kind to its HTTP status, in one place.
func statusOf(k approval.Kind) int {
	switch k {
	case approval.KindInvalid:
		return http.StatusBadRequest
	case approval.KindUnauthorized:
		return http.StatusUnauthorized
	case approval.KindForbidden:
		return http.StatusForbidden
	case approval.KindNotFound:
		return http.StatusNotFound
	case approval.KindConflict:
		return http.StatusConflict
	case approval.KindUnprocessable:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

// publicError turns any error into a status, a code and a message that are
// safe to show. Internal errors keep their detail in the log only.
func publicError(err error) (status int, code, message string) {
	if e := approval.AsError(err); e != nil {
		return statusOf(e.Kind), e.Code, e.Message
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return he.Code, approval.CodeNotFound, "There is nothing here."
		case http.StatusMethodNotAllowed:
			return he.Code, "method_not_allowed", "This address does not accept that method."
		case http.StatusRequestEntityTooLarge:
			return he.Code, "too_large", "The request is too large."
		case http.StatusUnauthorized:
			return he.Code, approval.CodeUnauthorized, "Authentication is required."
		case http.StatusBadRequest:
			return he.Code, approval.CodeInvalidRequest, "The request could not be read."
		}
		if he.Code < 500 {
			return he.Code, "request_error", http.StatusText(he.Code)
		}
	}
	return http.StatusInternalServerError, approval.CodeInternal, "Something went wrong on our side. It has been logged; please try again."
}

var headings = map[int]string{
	http.StatusBadRequest:            "That request could not be read",
	http.StatusUnauthorized:          "Please sign in",
	http.StatusForbidden:             "That was not allowed",
	http.StatusNotFound:              "Page not found",
	http.StatusConflict:              "Already answered",
	http.StatusUnprocessableEntity:   "That cannot be done",
	http.StatusRequestEntityTooLarge: "Too large",
	http.StatusServiceUnavailable:    "Temporarily unavailable",
}

// errorHandler is Echo's HTTPErrorHandler: JSON for the runtime API, a page
// (or an htmx fragment) for browsers. It logs internal errors with slog.
func errorHandler(log *slog.Logger, h *handlers.Handler) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status, code, message := publicError(err)
		if status >= 500 {
			log.ErrorContext(c.Request().Context(), "request failed", "err", err,
				"method", c.Request().Method, "path", c.Request().URL.Path,
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		}
		if strings.HasPrefix(c.Request().URL.Path, "/api/") {
			// Every API answer is no-store, refusals made before the
			// route's middleware ran (a body over the limit) included.
			c.Response().Header().Set("Cache-Control", "no-store")
			_ = c.JSON(status, map[string]any{"error": map[string]string{"code": code, "message": message}})
			return
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		heading := headings[status]
		if heading == "" {
			heading = "Something went wrong"
		}
		if c.Request().Header.Get("HX-Request") == "true" {
			_ = handlers.Render(c, status, views.ErrorFragment(heading, message))
			return
		}
		if rerr := handlers.Render(c, status, views.ErrorPage(h.Page(c, heading, ""), status, heading, message)); rerr != nil {
			log.ErrorContext(c.Request().Context(), "render error page", "err", rerr)
			_ = c.String(status, message)
		}
	}
}
