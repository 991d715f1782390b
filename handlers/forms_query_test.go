package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/dev"
)

// The webhook form and the email setting are read from the POST body
// only: the same fields in the URL's query string change nothing.
func TestWebhookAndEmailFormsIgnoreTheQuery(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	q := url.Values{"url": {"https://hooks.example/from-query"}, "secret": {"query-secret-0123456789"}, "events": {"approval.requested"}}
	resp, _ := admin.PostForm("/admin/webhooks?"+q.Encode(), url.Values{})
	if n := count(t, l.Env, `SELECT count(*) FROM webhooks`); n != 0 || resp.StatusCode == http.StatusSeeOther {
		t.Fatalf("a webhook created from the query string: status %d, %d webhooks", resp.StatusCode, n)
	}
	// Only the events in the query, the rest in the body: still refused.
	body := url.Values{"url": {"https://hooks.example/x"}, "secret": {"body-secret-0123456789"}}
	if resp, _ := admin.PostForm("/admin/webhooks?events=approval.requested", body); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("events from the query string: status %d, want 422", resp.StatusCode)
	}
	if n := count(t, l.Env, `SELECT count(*) FROM webhooks`); n != 0 {
		t.Fatalf("%d webhooks", n)
	}

	resp, _ = l.Member.PostForm("/settings/email?enabled=off", url.Values{})
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("email setting from the query string: status %d, want 400", resp.StatusCode)
	}
	if s, err := l.DB.NotificationSettingsFor(t.Context(), dev.DemoMember.Subject); err != nil || !s.EmailEnabled {
		t.Fatalf("email turned off from the query string: %+v %v", s, err)
	}
}

// A webhook secret with a line break or another control character is
// refused, naming the field; a secret's last four characters are shown
// with hidden characters as visible markers.
func TestWebhookSecretCharacters(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	for _, secret := range []string{"0123456789abcdef\r\nX-Extra: 1", "0123456789abcdef\nxyz", "0123456789abcdef\x00xyz", "0123456789ab\tcdef"} {
		resp, body := admin.PostForm("/admin/webhooks", url.Values{"url": {"https://hooks.example/x"}, "secret": {secret},
			"events": {"approval.requested"}})
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `id="webhook-secret-error"`) ||
			!strings.Contains(body, "control characters") {
			t.Fatalf("secret %q: status %d, want 422 naming the secret", secret, resp.StatusCode)
		}
	}
	if n := count(t, l.Env, `SELECT count(*) FROM webhooks`); n != 0 {
		t.Fatalf("%d webhooks stored with a control character in the secret", n)
	}
	resp, _ := admin.PostForm("/admin/webhooks", url.Values{"url": {"https://hooks.example/x"}, "secret": {"0123456789abcdef\u202eab"},
		"events": {"approval.requested"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("secret with a bidi character: status %d", resp.StatusCode)
	}
	_, page := admin.Get("/admin/webhooks")
	if strings.Contains(page, "\u202e") {
		t.Fatal("the secret's last characters are shown with a raw bidi control")
	}
	if !strings.Contains(page, `data-testid="secret-hint"><bdi class="untrusted">`) {
		t.Fatal("the secret hint is not shown as untrusted text")
	}
}
