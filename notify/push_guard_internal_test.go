package notify

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
)

// The client pushes go out with checks the address a name resolves to:
// "localhost" names a loopback address, so the client refuses to connect
// (the endpoint check refuses that name earlier; this is the layer that
// also catches a public name pointing at 127.0.0.1).
func TestGuardedPushClientRefusesResolvedLoopback(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	resp, err := guardedPushClient().Post("https://localhost:"+u.Port()+"/push", "application/octet-stream", nil)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("connected: %d", resp.StatusCode)
	}
	if !errors.Is(err, ErrPrivateEndpoint) {
		t.Fatalf("err = %v, want the private-address refusal", err)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("%d connections reached the server", n)
	}
}
