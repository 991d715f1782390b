package handlers

import (
	"net/url"
	"strconv"

	"github.com/countersign/countersign/approval"
	"github.com/labstack/echo/v4"
)

// pathParam returns a path parameter decoded exactly once. Echo routes on
// the request's raw path when it has one (a client that encodes "ns:conn"
// as "ns%3Aconn") and on the decoded path otherwise, so c.Param is raw in
// the first case and already decoded in the second. Every route reads its
// parameters here: "ns%3Aconn" and "ns:conn" name the same connector, and
// "ns%253Aconn" names the connector "ns%3Aconn" (which the name rule then
// refuses), never "ns:conn".
func pathParam(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	s, err := url.PathUnescape(v)
	if err != nil {
		return "", approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "not found")
	}
	return s, nil
}

// approvalIDParam returns the route's approval id, accepted only in the
// form the server issues it: a lower-case, hyphenated UUID. Any other
// spelling (upper case, braces, no hyphens) is 404 before any query, so a
// client cannot name one item by many strings and malformed text never
// reaches the database.
func approvalIDParam(c echo.Context) (string, error) {
	id, err := pathParam(c, "id")
	if err != nil {
		return "", err
	}
	if !approval.CanonicalUUID(id) {
		return "", approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "not found")
	}
	return id, nil
}

// numberParam returns a route's numeric id (a grant, key, webhook, tool),
// written as plain decimal digits; anything else is 404.
func numberParam(c echo.Context, name string) (int64, error) {
	s, err := pathParam(c, name)
	if err != nil {
		return 0, err
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, echo.ErrNotFound
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, echo.ErrNotFound
	}
	return n, nil
}
