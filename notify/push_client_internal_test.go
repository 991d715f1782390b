package notify

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPushClientGoesOutDirectly: docs/security.md promises that pushes go
// out directly — no proxy (it would connect on the server's behalf, past
// the address check) and no redirect followed (a push service answers for
// itself, and a redirect could point anywhere).
func TestPushClientGoesOutDirectly(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
	t.Setenv("HTTP_PROXY", "http://proxy.example:3128")
	c := guardedPushClient()
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T, want *http.Transport", c.Transport)
	}
	if tr.Proxy != nil {
		req := httptest.NewRequest(http.MethodPost, "https://fcm.googleapis.com/fcm/send/x", nil)
		u, err := tr.Proxy(req)
		t.Fatalf("the push client has a proxy function (it names %v, %v)", u, err)
	}
	if tr.DialContext == nil {
		t.Fatal("the push client dials without the address check")
	}
	if c.CheckRedirect == nil {
		t.Fatal("the push client follows redirects (no CheckRedirect)")
	}
	next := httptest.NewRequest(http.MethodPost, "https://169.254.169.254/latest", nil)
	via := []*http.Request{httptest.NewRequest(http.MethodPost, "https://fcm.googleapis.com/fcm/send/x", nil)}
	if err := c.CheckRedirect(next, via); !errors.Is(err, http.ErrUseLastResponse) {
		t.Fatalf("a redirect is followed: CheckRedirect says %v", err)
	}
}
