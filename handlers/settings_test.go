package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/notify"
	"github.com/countersign/countersign/web"
)

func TestSettingsWithoutSMTP(t *testing.T) {
	l := newLoop(t)
	resp, body := l.Member.Get("/settings")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Email is not configured on this server") {
		t.Fatalf("status %d:\n%s", resp.StatusCode, body)
	}
}

// With SMTP configured, a new item sends a mail through the running
// server's pipeline, and the person can turn mail off on /settings.
func TestSettingsEmail(t *testing.T) {
	mc, err := dev.StartMailCatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Close() })
	l := newLoop(t, func(c *web.Config) {
		s, _ := notify.ParseSMTPURL(mc.URL())
		c.SMTP, c.MailFrom = &s, "countersign@example.com"
	})
	_, body := l.Member.Get("/settings")
	if !strings.Contains(body, dev.DemoMember.Email) || !strings.Contains(body, "Email notifications are <strong>on</strong>") {
		t.Fatalf("settings:\n%s", body)
	}

	id := l.pending(t, l.call("mail", "send_email", `{"to":"qv-distinct-7731@example.org"}`))
	select {
	case m := <-mc.C:
		if !strings.Contains(m.Body, l.BaseURL+"/approvals/"+id) || strings.Contains(string(m.Raw), "qv-distinct-7731") {
			t.Fatalf("mail:\n%s", m.Raw)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no mail arrived")
	}

	resp, _ := l.Member.PostForm("/settings/email", url.Values{"enabled": {"off"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d", resp.StatusCode)
	}
	_, body = l.Member.Get("/settings")
	if !strings.Contains(body, "Email notifications are <strong>off</strong>") {
		t.Fatalf("after turning off:\n%s", body)
	}
	s, err := l.DB.NotificationSettingsFor(t.Context(), dev.DemoMember.Subject)
	if err != nil || s.EmailEnabled {
		t.Fatalf("stored: %+v %v", s, err)
	}
	resp, _ = l.Member.PostForm("/settings/email", url.Values{"enabled": {"maybe"}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad value: status %d", resp.StatusCode)
	}
	resp, _ = l.Member.PostForm("/settings/email", url.Values{"enabled": {"on"}, "csrf_token": {"forged"}})
	if resp.StatusCode == http.StatusSeeOther {
		t.Fatal("a forged CSRF token was accepted")
	}
}
