package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/notify"
	"github.com/countersign/countersign/web"
)

// demoOtto is on call: the backup team's member in escalation tests.
var demoOtto = dev.DemoUser{Key: "otto", Subject: "demo-otto", Email: "otto@example.com", Name: "Otto Oncall", Role: "member"}

// withOncall adds the team "oncall" with Otto (signed in) as its member.
func (l *loop) withOncall(t *testing.T) *testenv.Browser {
	t.Helper()
	l.IdP.AddUser(demoOtto)
	otto := l.NewBrowser()
	otto.SignIn(demoOtto.Key)
	for _, s := range []string{`INSERT INTO teams (name, source) VALUES ('oncall', 'admin')`,
		`INSERT INTO team_members (team, subject, source) VALUES ('oncall', 'demo-otto', 'admin')`} {
		if _, err := l.DB.Pool.Exec(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return otto
}

// mailTo waits for a mail to addr, skipping others.
func mailTo(t *testing.T, mc *dev.MailCatcher, addr string) dev.Mail {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case m := <-mc.C:
			if slices.Contains(m.To, addr) {
				return m
			}
		case <-deadline:
			t.Fatalf("no mail to %s arrived", addr)
		}
	}
}

// Escalation, end to end: an admin names a backup team and a one-second
// delay on the policy form; Maya's agent asks; until the delay passes Otto
// (on call) gets 404 on the item; then the sweep escalates it once, the
// real pipeline mails Otto, his card says so, he decides, and the audit
// names the escalation. The expiry is untouched.
func TestEscalation(t *testing.T) {
	mc, err := dev.StartMailCatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Close() })
	l := newLoop(t, func(c *web.Config) {
		s, _ := notify.ParseSMTPURL(mc.URL())
		c.SMTP, c.MailFrom = &s, "countersign@example.com"
	})
	otto := l.withOncall(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	id := toolID(t, l.Env, "mail", "send_email")
	before := toolVersion(t, l.Env, id)

	t.Run("ErrRefusedRules", func(t *testing.T) {
		for _, f := range []struct{ to, after, want string }{
			{"oncall", "", "after how long"},
			{"", "5m", "Choose the team"},
			{"oncall", "soon", "whole seconds or a duration"},
			{"oncall", "10m", "would never happen"},
			{"nobody", "5m", "no team named"},
		} {
			s, body := savePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}, "standing_approval": {"1"},
				"escalate_to": {f.to}, "escalate_after": {f.after}})
			if s != http.StatusUnprocessableEntity || !contains(body, f.want) || !contains(body, `data-testid="escalation-error"`) {
				t.Fatalf("%+v: status %d\n%s", f, s, body)
			}
		}
		if toolVersion(t, l.Env, id) != before {
			t.Fatal("a refused rule changed the policy")
		}
	})
	mustSavePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}, "standing_approval": {"1"},
		"escalate_to": {"oncall"}, "escalate_after": {"1s"}})
	if toolVersion(t, l.Env, id) == before {
		t.Fatal("the escalation rule did not bump the policy version")
	}
	if n := count(t, l.Env, `SELECT count(*) FROM audit_events WHERE action = 'policy changed' AND detail->'after'->>'escalate_to' = 'oncall'
		AND (detail->'after'->>'escalate_after_seconds')::int = 1`); n != 1 {
		t.Fatalf("policy change audit lines naming the escalation: %d", n)
	}
	_, body := admin.Get("/admin/policies/" + id)
	if !contains(body, `<option value="oncall" selected>`) || !contains(body, `value="1s"`) {
		t.Fatalf("the form does not show the rule:\n%s", body)
	}

	// Otto's phone, and a webhook for escalations: planned like a new
	// item's (sending to these made-up addresses then fails, and retries).
	phone, err := l.DB.SavePushSubscription(context.Background(), db.PushSubscription{Subject: demoOtto.Subject,
		Endpoint: "https://push.example.invalid/otto", P256dh: "p", Auth: "a", DeviceName: "Otto's phone"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := admin.PostForm("/admin/webhooks", url.Values{"url": {"https://hooks.example.invalid/oncall"},
		"secret": {"0123456789abcdef0123"}, "events": {"approval.escalated"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("webhook: %d\n%s", resp.StatusCode, body)
	}

	item := l.pending(t, l.call("mail", "send_email", `{"to":"qv-escalate-5521@example.org"}`))
	var expires time.Time
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT expires_at FROM approvals WHERE id = $1`, item).Scan(&expires); err != nil {
		t.Fatal(err)
	}
	mailTo(t, mc, dev.DemoMember.Email) // the owner is told first, as always

	// Before the delay: Otto does not learn the item exists.
	if resp, _ := otto.Get("/approvals/" + item); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("before escalation, the backup saw the item: %d", resp.StatusCode)
	}
	if s, _ := decide(otto, item, "approve"); s != http.StatusNotFound {
		t.Fatalf("before escalation, the backup decided: %d", s)
	}
	if _, inbox := otto.Get("/"); contains(inbox, item) {
		t.Fatal("before escalation, the item is in the backup's inbox")
	}

	m := mailTo(t, mc, demoOtto.Email)
	if !contains(m.Body, l.BaseURL+"/approvals/"+item) || !contains(m.Body, "Escalated: nobody answered in time") || contains(string(m.Raw), "qv-escalate-5521") {
		t.Fatalf("escalation mail:\n%s", m.Raw)
	}
	var escalatedAt *time.Time
	var after time.Time
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT escalated_at, expires_at FROM approvals WHERE id = $1`, item).Scan(&escalatedAt, &after); err != nil {
		t.Fatal(err)
	}
	if escalatedAt == nil || !after.Equal(expires) {
		t.Fatalf("escalated at %v; expiry %v → %v (never extended)", escalatedAt, expires, after)
	}

	resp, page := otto.Get("/approvals/" + item)
	if resp.StatusCode != http.StatusOK || !contains(page, `data-testid="escalated"`) || !contains(page, "oncall") || !contains(page, "after 1 second") {
		t.Fatalf("the backup's request page: %d\n%s", resp.StatusCode, page)
	}
	if _, inbox := otto.Get("/"); !contains(inbox, item) {
		t.Fatal("escalated, but not in the backup's inbox")
	}
	if _, own := l.Member.Get("/approvals/" + item); !contains(own, "Escalated to") {
		t.Fatal("the owner's page does not say it was escalated")
	}
	if s, body := decide(otto, item, "approve"); s != http.StatusOK && s != http.StatusSeeOther {
		t.Fatalf("the backup's decision: %d\n%s", s, body)
	}
	if st := l.status(t, item); st != string(approval.StatusApproved) {
		t.Fatalf("status %s", st)
	}
	// Escalated once, audited with the team; the decision is Otto's.
	if n := count(t, l.Env, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'escalated'
		AND actor_kind = 'system' AND detail->>'to_team' = 'oncall' AND detail->>'summary' = 'escalated to team oncall'`, item); n != 1 {
		t.Fatalf("escalated audit lines: %d", n)
	}
	if n := count(t, l.Env, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'approved' AND actor_id = 'demo-otto'`, item); n != 1 {
		t.Fatalf("Otto's approval lines: %d", n)
	}
	if n := count(t, l.Env, `SELECT count(*) FROM notification_events WHERE approval_id = $1 AND kind = 'approval.escalated'`, item); n != 1 {
		t.Fatalf("escalation events: %d", n)
	}
	planned := `SELECT string_agg(d.channel || ':' || d.target, ',' ORDER BY d.channel, d.target) FROM notification_deliveries d
		JOIN notification_events e ON e.id = d.event_id WHERE e.approval_id = $1 AND e.kind = 'approval.escalated'`
	want := "email:demo-otto,push:" + itoa(phone.ID) + ",webhook:"
	var got string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		var s *string
		if err := l.DB.Pool.QueryRow(context.Background(), planned, item).Scan(&s); err != nil {
			t.Fatal(err)
		}
		if s != nil {
			if got = *s; strings.HasPrefix(got, want) {
				break
			}
		}
	}
	if !strings.HasPrefix(got, want) {
		t.Fatalf("escalation deliveries %q, want %s<id>: the backup's mail, push device and the webhook", got, want)
	}
}

// The expiry wins: an escalation due at or after the item's expiry never
// happens, and the backup never sees the item.
func TestEscalationExpiryWins(t *testing.T) {
	l := newLoop(t, func(c *web.Config) { c.ApprovalTimeout = 2 * time.Second })
	otto := l.withOncall(t)
	if _, err := l.DB.SetToolPolicy(context.Background(), approval.SystemActor, "mail", "send_email", approval.Policy{
		Mode: approval.ModeRequireApproval, StandingApproval: true, Escalation: approval.Escalation{Team: "oncall", After: 3 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	item := l.pending(t, l.call("mail", "send_email", `{"to":"a@example.org"}`))
	var escalateAt *time.Time
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT escalate_at FROM approvals WHERE id = $1`, item).Scan(&escalateAt); err != nil || escalateAt != nil {
		t.Fatalf("an escalation after the expiry was planned: %v %v", escalateAt, err)
	}
	// Past the expiry (2 s) and past when it would have escalated (3 s).
	for end := time.Now().Add(3500 * time.Millisecond); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if resp, _ := otto.Get("/approvals/" + item); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("the backup saw an item whose escalation comes after its expiry: %d", resp.StatusCode)
		}
	}
	if _, err := l.DB.ExpireDue(context.Background(), 10); err != nil { // the serve command's sweep
		t.Fatal(err)
	}
	if st := l.status(t, item); st != string(approval.StatusExpired) {
		t.Fatalf("status %s", st)
	}
	if n := l.auditCount(t, item, "escalated"); n != 0 {
		t.Fatalf("escalated after expiry: %d lines", n)
	}
	if resp, _ := otto.Get("/approvals/" + item); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the backup sees the expired item: %d", resp.StatusCode)
	}
	if strings.Contains(l.Logs(), "escalation sweep") {
		t.Fatalf("the sweep failed:\n%s", l.Logs())
	}
}

// Many sweeps at once (several instances, the background one included)
// escalate an item once: one audit line, one event.
func TestEscalationOnceUnderConcurrency(t *testing.T) {
	l := newLoop(t)
	l.withOncall(t)
	item := l.pending(t, l.call("mail", "send_email", `{"to":"a@example.org"}`))
	if _, err := l.DB.Pool.Exec(context.Background(), `UPDATE approvals SET escalate_to = 'oncall', escalate_after_seconds = 1,
		escalate_at = now() WHERE id = $1`, item); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.DB.EscalateDue(context.Background(), 10); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	time.Sleep(300 * time.Millisecond) // the background sweep's turn too
	if n := l.auditCount(t, item, "escalated"); n != 1 {
		t.Fatalf("escalated lines: %d", n)
	}
	if n := count(t, l.Env, `SELECT count(*) FROM notification_events WHERE approval_id = $1 AND kind = 'approval.escalated'`, item); n != 1 {
		t.Fatalf("escalation events: %d", n)
	}
}
