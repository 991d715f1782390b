package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// demoSam is a second person: Maya's colleague, her delegate in tests.
var demoSam = dev.DemoUser{Key: "sam", Subject: "demo-sam", Email: "sam@example.com", Name: "Sam Delegate", Role: "member"}

// signInSam adds Sam to the identity provider and signs him in.
func (l *loop) signInSam(t *testing.T) *testenv.Browser {
	t.Helper()
	l.IdP.AddUser(demoSam)
	b := l.NewBrowser()
	b.SignIn(demoSam.Key)
	return b
}

// awayUntil is a datetime-local value d from now, in UTC.
func awayUntil(d time.Duration) string { return time.Now().Add(d).UTC().Format("2006-01-02T15:04") }

// The Settings panel names a delegate until a time, refuses what it must,
// ends early, and admins see and end delegations; every change audited.
func TestSettingsAway(t *testing.T) {
	l := newLoop(t)
	sam := l.signInSam(t)
	ctx := context.Background()

	_, body := l.Member.Get("/settings")
	if !contains(body, "While you’re away") || !contains(body, `data-testid="away-form"`) || contains(body, `data-testid="away-current"`) {
		t.Fatalf("settings without a delegate:\n%s", body)
	}
	refused := []struct {
		name string
		form url.Values
		want string
	}{
		{"ErrSelf", url.Values{"delegate_email": {dev.DemoMember.Email}, "until": {awayUntil(2 * time.Hour)}}, "You cannot name yourself"},
		{"ErrNeverSignedIn", url.Values{"delegate_email": {"nobody@example.com"}, "until": {awayUntil(2 * time.Hour)}}, "has signed in"},
		{"ErrPast", url.Values{"delegate_email": {demoSam.Email}, "until": {awayUntil(-2 * time.Hour)}}, "in the future"},
		{"ErrTooLong", url.Values{"delegate_email": {demoSam.Email}, "until": {awayUntil(90 * 24 * time.Hour)}}, "at most 60 days"},
		{"ErrMalformed", url.Values{"delegate_email": {demoSam.Email}, "until": {"friday"}}, "date and time"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			resp, body := l.Member.PostForm("/settings/away", c.form)
			if resp.StatusCode != http.StatusUnprocessableEntity || !contains(body, c.want) || !contains(body, `data-testid="away-error"`) {
				t.Fatalf("status %d, want 422 with %q:\n%s", resp.StatusCode, c.want, body)
			}
		})
	}
	resp, _ := l.Member.PostForm("/settings/away", url.Values{"delegate_email": {demoSam.Email}, "until": {awayUntil(2 * time.Hour)},
		"csrf_token": {"forged"}})
	if resp.StatusCode == http.StatusSeeOther {
		t.Fatal("a forged CSRF token was accepted")
	}

	// Friday 18:00 in Berlin (UTC+1 in winter: getTimezoneOffset -60).
	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Minute)
	local := until.In(time.FixedZone("", 3600)).Format("2006-01-02T15:04")
	resp, _ = l.Member.PostForm("/settings/away", url.Values{"delegate_email": {"SAM@example.com"}, "until": {local}, "tz_offset": {"-60"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("start: status %d", resp.StatusCode)
	}
	maya := l.User(dev.DemoMember.Subject)
	d, ok, err := l.DB.DelegationOf(ctx, maya.ID)
	if err != nil || !ok || d.DelegateSubject != demoSam.Subject || !d.EndsAt.Equal(until) || !d.Active {
		t.Fatalf("stored: %+v %v %v (want until %s)", d, ok, err, until)
	}
	_, body = l.Member.Get("/settings")
	if !contains(body, `data-testid="away-current"`) || !contains(body, "Sam Delegate") || !contains(body, "decides for you until") {
		t.Fatalf("settings with a delegate:\n%s", body)
	}
	_, body = sam.Get("/settings")
	if !contains(body, `data-testid="away-for"`) || !contains(body, "Maya Member") {
		t.Fatalf("the delegate's settings:\n%s", body)
	}

	// Sam cannot end Maya's delegation; neither page nor admin route is his.
	if resp, _ := sam.PostForm("/settings/away/"+itoa(d.ID)+"/end", url.Values{}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the delegate ended it: status %d", resp.StatusCode)
	}
	if resp, _ := sam.Get("/admin/delegations"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a member saw the admin page: status %d", resp.StatusCode)
	}
	if resp, _ := l.Member.PostForm("/settings/away/"+itoa(d.ID)+"/end", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("end: status %d", resp.StatusCode)
	}
	if _, ok, _ := l.DB.DelegationOf(ctx, maya.ID); ok {
		t.Fatal("still delegated after ending")
	}
	if resp, _ := l.Member.PostForm("/settings/away/"+itoa(d.ID)+"/end", url.Values{}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("ended twice: status %d", resp.StatusCode)
	}

	// An admin sees the one holding now and ends it.
	if resp, _ := l.Member.PostForm("/settings/away", url.Values{"delegate_email": {demoSam.Email}, "until": {awayUntil(3 * time.Hour)}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("start again: status %d", resp.StatusCode)
	}
	d, _, _ = l.DB.DelegationOf(ctx, maya.ID)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	if _, a := admin.Get("/settings"); !contains(a, `data-testid="admin-delegations-link"`) {
		t.Fatal("no link to the admin page on an admin's settings")
	}
	if _, m := l.Member.Get("/settings"); contains(m, `data-testid="admin-delegations-link"`) {
		t.Fatal("a member's settings link to the admin page")
	}
	_, body = admin.Get("/admin/delegations")
	if !contains(body, `data-testid="delegations-open"`) || !contains(body, "Sam Delegate") || !contains(body, "/admin/delegations/"+itoa(d.ID)+"/end") {
		t.Fatalf("admin page:\n%s", body)
	}
	if resp, _ := admin.PostForm("/admin/delegations/"+itoa(d.ID)+"/end", url.Values{"csrf_token": {"forged"}}); resp.StatusCode == http.StatusSeeOther {
		t.Fatal("admin end with a forged CSRF token was accepted")
	}
	if resp, _ := admin.PostForm("/admin/delegations/"+itoa(d.ID)+"/end", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("admin end: status %d", resp.StatusCode)
	}
	_, body = admin.Get("/admin/delegations")
	if !contains(body, `data-testid="delegations-none"`) || !contains(body, `by <bdi class="untrusted">Avery Admin`) {
		t.Fatalf("admin page after ending:\n%s", body)
	}
	var lines []string
	for _, a := range l.AuditActions() {
		if strings.HasPrefix(a, "delegation") {
			lines = append(lines, a)
		}
	}
	if strings.Join(lines, ",") != "delegation started,delegation ended,delegation started,delegation ended" {
		t.Fatalf("audit: %v", lines)
	}
	var actor string
	if err := l.DB.Pool.QueryRow(ctx, `SELECT actor_id FROM audit_events WHERE action = 'delegation ended' ORDER BY id DESC LIMIT 1`).Scan(&actor); err != nil || actor != dev.DemoAdmin.Subject {
		t.Fatalf("last end's actor %q %v", actor, err)
	}
}
