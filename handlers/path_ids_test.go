package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/labstack/echo/v4"
)

// Upper case in any one group of a UUID, the first included, is not the
// id the server issued: 404.
func TestApprovalIDUpperCaseInOneGroup(t *testing.T) {
	const id = "0b1e6f3a-6f0e-4c36-9a55-2f1f5e1c9d7e"
	groups := strings.Split(id, "-")
	for i := range groups {
		g := append([]string(nil), groups...)
		g[i] = strings.ToUpper(g[i])
		s := strings.Join(g, "-")
		if _, err := routeID(t, s); approval.KindOf(err) != approval.KindNotFound {
			t.Errorf("group %d upper case, %q: %v, want not found", i+1, s, err)
		}
	}
	// One letter is enough.
	if _, err := routeID(t, "0B1e6f3a-6f0e-4c36-9a55-2f1f5e1c9d7e"); approval.KindOf(err) != approval.KindNotFound {
		t.Errorf("one upper-case letter: %v, want not found", err)
	}
}

// A numeric path id is plain decimal digits: a sign, a space, hex or an
// empty id is 404, although strconv would read some of them.
func TestNumberParamDigitsOnly(t *testing.T) {
	route := func(s string) (int64, int) {
		e := echo.New()
		var got int64
		e.GET("/n/:id", func(c echo.Context) error {
			n, err := numberParam(c, "id")
			if err != nil {
				return err
			}
			got = n
			return c.NoContent(http.StatusOK)
		})
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/n/"+s, nil))
		return got, rec.Code
	}
	if n, code := route("5"); code != http.StatusOK || n != 5 {
		t.Fatalf("5: %d %d", code, n)
	}
	for _, s := range []string{"+5", "%2B5", "-5", "%205", "5%20", "0x5", "5e0", "%EF%BC%95", "99999999999999999999"} {
		if n, code := route(s); code != http.StatusNotFound {
			t.Errorf("%q: %d (%d), want 404", s, code, n)
		}
	}
}
