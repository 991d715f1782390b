package web

import (
	"net/url"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/labstack/echo/v4"
)

// rejectNUL refuses, with a 400, any request whose path or query holds a
// NUL character (sent as %00). No address of Countersign needs one, and
// Postgres cannot store or compare one: let through, it would reach a query
// and fail there as an internal error.
func rejectNUL(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if where := nulIn(c.Request().URL); where != "" {
			return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest,
				"The %s holds a NUL character (%%00), which is not accepted.", where)
		}
		return next(c)
	}
}

// nulIn names the part of u that holds a NUL, or returns "".
func nulIn(u *url.URL) string {
	if strings.ContainsRune(u.Path, 0) || strings.ContainsRune(u.RawPath, 0) {
		return "address"
	}
	if strings.ContainsRune(u.RawQuery, 0) {
		return "query"
	}
	// Every pair is decoded, also those after a malformed one, so that an
	// encoding Go tolerates and a handler reads cannot hide a NUL.
	q, _ := url.ParseQuery(u.RawQuery)
	for k, vs := range q {
		if strings.ContainsRune(k, 0) {
			return "query"
		}
		for _, v := range vs {
			if strings.ContainsRune(v, 0) {
				return "query"
			}
		}
	}
	return ""
}
