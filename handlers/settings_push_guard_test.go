package handlers_test

import (
	"net/http"
	"testing"

	"github.com/countersign/countersign/dev"
)

// A member cannot make the server connect to its own loopback, the
// internal network or a URL with credentials: such endpoints are refused
// (422) and no device is stored.
func TestSettingsPushRefusesPrivateEndpoints(t *testing.T) {
	l := newLoop(t)
	l.Member.Get("/settings") // creates the VAPID keys
	csrf := l.Member.CSRF()
	for _, endpoint := range []string{
		"https://127.0.0.1:18997/internal-admin", "https://user:pw@127.0.0.1/x", "https://user:pw@push.example.net/x",
		"https://localhost/x", "https://localhost.:8443/x", "https://[::1]/x", "https://10.0.0.5/x", "https://169.254.169.254/latest",
	} {
		if resp, out := postSubscription(l.Member, browserSubscription(t, endpoint), csrf); resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: status %d, want 422: %s", endpoint, resp.StatusCode, out)
		}
	}
	subs, err := l.DB.PushSubscriptionsOf(t.Context(), dev.DemoMember.Subject)
	if err != nil || len(subs) != 0 {
		t.Fatalf("%d devices stored after refused endpoints (%v)", len(subs), err)
	}
	if resp, out := postSubscription(l.Member, browserSubscription(t, "https://push.example.net/send/ok"), csrf); resp.StatusCode != http.StatusCreated {
		t.Fatalf("public endpoint: status %d: %s", resp.StatusCode, out)
	}
}
