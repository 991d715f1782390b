package notify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/notify"
)

// mailSink is a real SMTP server (go-smtp) that keeps what it receives.
func mailSink(t *testing.T) *dev.MailCatcher {
	t.Helper()
	mc, err := dev.StartMailCatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Close() })
	return mc
}

func nextMail(t *testing.T, mc *dev.MailCatcher) dev.Mail {
	t.Helper()
	select {
	case m := <-mc.C:
		return m
	case <-time.After(15 * time.Second):
		t.Fatal("no mail arrived")
	}
	return dev.Mail{}
}

// startMail runs a pipeline with the email channel against mc, grouping
// a person's mails within window.
func (f *fixture) startMail(t *testing.T, mc *dev.MailCatcher, window time.Duration) *instance {
	t.Helper()
	cfg, err := notify.ParseSMTPURL(mc.URL())
	if err != nil {
		t.Fatal(err)
	}
	return f.start(t, notify.Options{}, func(s *db.DB) []notify.Channel {
		return []notify.Channel{notify.NewEmail(s, cfg, "Countersign <countersign@example.com>", f.base, window, f.clock.Now)}
	})
}

func TestEmailForNewItem(t *testing.T) {
	f := newFixture(t)
	mc := mailSink(t)
	f.startMail(t, mc, time.Hour)
	res, err := f.check("send_email", `{"to":"qv-secret-recipient@example.org","body":"xylophone-7741"}`, "forward zebra-5512 to the team")
	if err != nil || res.Approval == nil {
		t.Fatal(err)
	}
	m := nextMail(t, mc)
	if len(m.To) != 1 || m.To[0] != "maya@example.com" {
		t.Fatalf("recipients %v", m.To)
	}
	if m.Subject != "Approval needed: Send email" {
		t.Fatalf("subject %q", m.Subject)
	}
	for _, want := range []string{"https://countersign.example/approvals/" + res.Approval.ID, "Send email", "Mail", "nightly agent",
		res.Approval.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC")} {
		if !strings.Contains(m.Body, want) {
			t.Fatalf("the mail lacks %q:\n%s", want, m.Body)
		}
	}
	for _, secret := range []string{"qv-secret-recipient", "xylophone-7741", "zebra-5512"} {
		if strings.Contains(string(m.Raw), secret) || strings.Contains(m.Body, secret) {
			t.Fatalf("the mail carries %q:\n%s", secret, m.Raw)
		}
	}
	if ct := m.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("content type %q", ct)
	}
}

func TestEmailOptOut(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	mc := mailSink(t)
	if err := f.store.SetEmailEnabled(ctx, f.user.Subject, false); err != nil {
		t.Fatal(err)
	}
	in := f.startMail(t, mc, time.Nanosecond)
	off := f.pending(t, "send_email", `{"n":1}`)
	waitFor(t, "the event to be planned", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_events WHERE approval_id = $1 AND planned_at IS NOT NULL`, off.ID) == 1
	})
	if n := f.count(t, `SELECT count(*) FROM notification_deliveries WHERE channel = 'email'`); n != 0 {
		t.Fatalf("mail turned off, yet %d mail(s) planned", n)
	}
	if err := f.store.SetEmailEnabled(ctx, f.user.Subject, true); err != nil {
		t.Fatal(err)
	}
	on := f.pending(t, "send_email", `{"n":2}`)
	in.P.Kick()
	m := nextMail(t, mc)
	if !strings.Contains(m.Body, on.ID) || strings.Contains(m.Body, off.ID) {
		t.Fatalf("want a mail about %s only:\n%s", on.ID, m.Body)
	}
	if len(mc.Mails()) != 1 {
		t.Fatalf("want 1 mail, got %d", len(mc.Mails()))
	}
}

// A mail sent, then items within the window wait and arrive as one mail.
func TestEmailGroupsBurst(t *testing.T) {
	f := newFixture(t)
	mc := mailSink(t)
	in := f.startMail(t, mc, time.Hour)
	first := f.pending(t, "send_email", `{"n":1}`)
	m1 := nextMail(t, mc)
	if !strings.Contains(m1.Body, first.ID) {
		t.Fatalf("first mail:\n%s", m1.Body)
	}
	waitFor(t, "the first mail to be recorded", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_settings WHERE last_mail_at IS NOT NULL`) == 1
	})
	var burst []db.Approval
	for i := 2; i <= 4; i++ {
		burst = append(burst, f.pending(t, "send_email", `{"n":`+string(rune('0'+i))+`}`))
	}
	waitFor(t, "the burst to be planned", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE channel = 'email' AND state = 'pending'`) == 3
	})
	in.P.Kick()
	if n := len(mc.Mails()); n != 1 {
		t.Fatalf("within the window: want 1 mail so far, got %d", n)
	}
	f.clock.Advance(time.Hour)
	in.P.Kick()
	m2 := nextMail(t, mc)
	if m2.Subject != "Approval needed: 3 calls are waiting" {
		t.Fatalf("subject %q", m2.Subject)
	}
	for _, a := range burst {
		if !strings.Contains(m2.Body, "https://countersign.example/approvals/"+a.ID) {
			t.Fatalf("the grouped mail lacks %s:\n%s", a.ID, m2.Body)
		}
	}
	waitFor(t, "the burst to be sent", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE channel = 'email' AND state = 'sent'`) == 4
	})
	if n := len(mc.Mails()); n != 2 {
		t.Fatalf("want 2 mails, got %d", n)
	}
}

// A tool name with CR/LF cannot add headers or recipients; the name shows
// with its hidden characters as markers, whole.
func TestEmailHeaderInjection(t *testing.T) {
	f := newFixture(t)
	evil := "Deploy\r\nBcc: attacker@evil.example\r\nX-Injected: yes"
	f.addTool(t, "deploy", evil)
	mc := mailSink(t)
	f.startMail(t, mc, time.Hour)
	f.pending(t, "deploy", `{}`)
	m := nextMail(t, mc)
	if len(m.To) != 1 || m.To[0] != "maya@example.com" {
		t.Fatalf("recipients %v", m.To)
	}
	if m.Header.Get("Bcc") != "" || m.Header.Get("X-Injected") != "" {
		t.Fatalf("injected header:\n%s", m.Raw)
	}
	shown := approval.Visible(evil, approval.SingleLine).String()
	if m.Subject != "Approval needed: "+shown {
		t.Fatalf("subject %q, want the name with markers %q", m.Subject, shown)
	}
	if !strings.Contains(m.Body, "Tool:      "+shown+"\n") {
		t.Fatalf("body:\n%s", m.Body)
	}
}

// Items that come at once, before the first mail went out, arrive in at
// most two mails: the first at once (with whatever was planned with it),
// the others together one window later — never one mail per item.
func TestEmailGroupsQuickBurst(t *testing.T) {
	f := newFixture(t)
	mc := mailSink(t)
	in := f.startMail(t, mc, time.Hour)
	var items []db.Approval
	for i := 1; i <= 4; i++ {
		items = append(items, f.pending(t, "send_email", `{"n":`+string(rune('0'+i))+`}`))
	}
	waitFor(t, "the burst to be planned", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE channel = 'email'`) == 4
	})
	nextMail(t, mc)
	f.clock.Advance(time.Hour)
	in.P.Kick()
	waitFor(t, "every mail delivery to be sent", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE channel = 'email' AND state = 'sent'`) == 4
	})
	mails := mc.Mails()
	if len(mails) > 2 {
		t.Fatalf("want at most 2 mails for a burst of 4, got %d", len(mails))
	}
	all := ""
	for _, m := range mails {
		all += m.Body
	}
	for _, a := range items {
		if strings.Count(all, a.ID) != 1 {
			t.Fatalf("item %s is in %d mails", a.ID, strings.Count(all, a.ID))
		}
	}
}
