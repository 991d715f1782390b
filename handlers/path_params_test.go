package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
)

// route serves target through a real Echo router with one route and
// returns what the handler got from pathParam.
func route(t *testing.T, pattern, target, name string) (string, error) {
	t.Helper()
	e := echo.New()
	var got string
	var gotErr error
	e.GET(pattern, func(c echo.Context) error {
		got, gotErr = pathParam(c, name)
		return nil
	})
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, target, nil))
	return got, gotErr
}

func TestPathParamDecodedOnce(t *testing.T) {
	cases := []struct{ target, want string }{
		{"/c/ns:conn", "ns:conn"},
		{"/c/ns%3Aconn", "ns:conn"},
		{"/c/ns%3aconn", "ns:conn"},
		{"/c/a.b%2Ec", "a.b.c"},
		{"/c/ns%253Aconn", "ns%3Aconn"}, // once: the literal "%3A", never ":"
		{"/c/a%2541", "a%41"},           // Go leaves RawPath empty here: Echo routes on the decoded path
		{"/c/a%20b", "a b"},
		{"/c/a%2Fb", "a/b"}, // one segment, refused later by the name rule
	}
	for _, tc := range cases {
		got, err := route(t, "/c/:name", tc.target, "name")
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.target, got, err, tc.want)
		}
	}
}

func TestApprovalIDCanonicalOnly(t *testing.T) {
	const id = "0b1e6f3a-6f0e-4c36-9a55-2f1f5e1c9d7e"
	ok := []string{id, strings.Replace(id, "-", "%2D", 1)}
	bad := []string{
		strings.ToUpper(id),
		"{" + id + "}",
		"%7B" + id + "%7D",
		strings.ReplaceAll(id, "-", ""),
		"urn:uuid:" + id,
		id + "%0A",
		id + "%20",
		"not-a-uuid",
		"",
	}
	for _, s := range ok {
		if _, err := routeID(t, s); err != nil {
			t.Errorf("%q refused: %v", s, err)
		}
	}
	for _, s := range bad {
		if _, err := routeID(t, s); approval.KindOf(err) != approval.KindNotFound {
			t.Errorf("%q: %v, want not found", s, err)
		}
	}
}

func routeID(t *testing.T, s string) (string, error) {
	t.Helper()
	e := echo.New()
	var got string
	var err error = echo.ErrMethodNotAllowed // the route was not reached
	e.GET("/a/:id", func(c echo.Context) error {
		got, err = approvalIDParam(c)
		return nil
	})
	e.GET("/a/", func(c echo.Context) error {
		got, err = approvalIDParam(c)
		return nil
	})
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/a/"+s, nil))
	return got, err
}

// TestMalformedApprovalIDNeverQueries drives every route that takes an
// approval id with a handler that has no database at all: a malformed id
// must be answered 404 before any query (a query would panic on the nil
// pool), so Postgres never sees the text.
func TestMalformedApprovalIDNeverQueries(t *testing.T) {
	h := &Handler{}
	routes := map[string]echo.HandlerFunc{
		"GET /api/v1/approvals/:id":        h.APIApprovalGet,
		"POST /api/v1/approvals/:id/claim": h.APIApprovalClaim,
		"GET /approvals/:id":               h.ApprovalShow,
		"GET /approvals/:id/values/:n":     h.ApprovalValue,
		"POST /approvals/:id/decision":     h.ApprovalDecide,
	}
	ids := []string{"0B1E6F3A-6F0E-4C36-9A55-2F1F5E1C9D7E", "%7B0b1e6f3a-6f0e-4c36-9a55-2f1f5e1c9d7e%7D",
		"0b1e6f3a6f0e4c369a552f1f5e1c9d7e", "x'%3B--", "%C3%A9"}
	for pattern, fn := range routes {
		method, path, _ := strings.Cut(pattern, " ")
		for _, id := range ids {
			e := echo.New()
			var err error
			e.Add(method, path, func(c echo.Context) error {
				c.Set(CtxAPIKey, &db.APIKey{})
				c.Set(CtxUser, &db.User{Subject: "s"})
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s with %q reached the database: %v", pattern, id, r)
					}
				}()
				err = fn(c)
				return nil
			})
			target := strings.NewReplacer(":id", id, ":n", "0").Replace(path)
			req := httptest.NewRequest(method, target, strings.NewReader(`{"call_id":"c","arguments_digest":"sha256:00"}`))
			e.ServeHTTP(httptest.NewRecorder(), req)
			if approval.KindOf(err) != approval.KindNotFound {
				t.Errorf("%s with %q: %v, want not found", pattern, id, err)
			}
		}
	}
}
