package web

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// apiNoRoute answers an API request no route took: 405 with an Allow
// header when the path is an API route's under another method (GET on a
// connector), 404 otherwise. Both are declared in docs/openapi.yaml. The
// catch-all would otherwise answer every wrong method 404, which tells a
// client generator nothing.
func (s *Server) apiNoRoute(c echo.Context) error {
	path := c.Request().URL.EscapedPath()
	var allow []string
	for _, r := range s.Echo.Routes() {
		if r.Method == echo.RouteNotFound || strings.HasSuffix(r.Path, "/*") || !strings.HasPrefix(r.Path, "/api/v1/") {
			continue
		}
		if matchPath(r.Path, path) && !slices.Contains(allow, r.Method) {
			allow = append(allow, r.Method)
		}
	}
	if len(allow) == 0 {
		return echo.ErrNotFound
	}
	slices.Sort(allow)
	c.Response().Header().Set("Allow", strings.Join(allow, ", "))
	return echo.NewHTTPError(http.StatusMethodNotAllowed)
}

// matchPath reports whether path has route's shape: the same segments,
// where a ":name" segment stands for any non-empty one.
func matchPath(route, path string) bool {
	rs, ps := strings.Split(route, "/"), strings.Split(path, "/")
	if len(rs) != len(ps) {
		return false
	}
	for i := range rs {
		if strings.HasPrefix(rs[i], ":") {
			if ps[i] == "" {
				return false
			}
		} else if rs[i] != ps[i] {
			return false
		}
	}
	return true
}
