package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/labstack/echo/v4"
)

// decodeJSON reads exactly one JSON object into v, rejecting unknown fields
// and trailing data (400 with a message that names the problem).
func decodeJSON(c echo.Context, v any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := "The request body must be a JSON object."
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			msg = "The request body is empty; a JSON object is required."
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			msg = "Unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ") + "."
		case errors.As(err, &syn):
			msg = "The request body is not valid JSON."
		case errors.As(err, &typ):
			msg = "The field " + typ.Field + " has the wrong type."
		case strings.Contains(err.Error(), "request body too large"):
			msg = "The request body is too large."
		}
		return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "%s", msg)
	}
	if dec.More() {
		return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "The request body must hold one JSON object.")
	}
	return nil
}

// required returns a 400 naming the first empty field, or nil.
func required(fields ...[2]string) error {
	for _, f := range fields {
		if strings.TrimSpace(f[1]) == "" {
			return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "The field %s is required.", f[0])
		}
		if len(f[1]) > 500 {
			return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "The field %s is too long (500 bytes at most).", f[0])
		}
	}
	return nil
}
