package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/dev"
)

// Standing consent is the owner's alone: on an owner-rule tool that offers
// standing approval, once an item escalated to the backup team, the
// backup's member is offered approve and reject only (request page and
// inbox card), a standing answer from them is refused with no grant made,
// and their plain approval decides the call.
func TestBackupMemberNoStandingConsent(t *testing.T) {
	ctx := context.Background()
	l := newLoop(t)
	otto := l.withOncall(t)
	if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email", approval.Policy{
		Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
		t.Fatal(err)
	}
	item := l.pending(t, l.call("mail", "send_email", `{"to":"backup-standing@example.org"}`))
	// The owner is offered standing answers on this item.
	if _, page := l.Member.Get("/approvals/" + item); !contains(page, `value="always"`) {
		t.Fatalf("the owner's page offers no standing answer:\n%s", page)
	}
	if _, err := l.DB.Pool.Exec(ctx, `UPDATE approvals SET escalate_to = 'oncall', escalate_after_seconds = 1,
		escalate_at = now() WHERE id = $1`, item); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB.EscalateDue(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if l.auditCount(t, item, "escalated") != 1 {
		t.Fatal("the item did not escalate")
	}

	resp, page := otto.Get("/approvals/" + item)
	if resp.StatusCode != http.StatusOK || !contains(page, `value="approve"`) {
		t.Fatalf("the backup's request page: %d\n%s", resp.StatusCode, page)
	}
	for _, d := range []approval.Decision{approval.AlwaysAllow, approval.ApproveConversation, approval.AlwaysMatching} {
		if contains(page, `value="`+string(d)+`"`) {
			t.Errorf("the backup's request page offers %q", d)
		}
	}
	_, inbox := otto.Get("/")
	if !contains(inbox, item) {
		t.Fatal("escalated, but not in the backup's inbox")
	}
	for _, d := range []approval.Decision{approval.AlwaysAllow, approval.ApproveConversation} {
		if contains(inbox, `value="`+string(d)+`"`) {
			t.Errorf("the backup's inbox card offers %q", d)
		}
	}

	for _, d := range []approval.Decision{approval.AlwaysAllow, approval.ApproveConversation} {
		if s, body := decide(otto, item, string(d)); s != http.StatusUnprocessableEntity {
			t.Fatalf("the backup's %q: %d, want 422\n%s", d, s, body)
		}
		if st := l.status(t, item); st != string(approval.StatusPending) {
			t.Fatalf("after the backup's %q: %s", d, st)
		}
	}
	if n := count(t, l.Env, `SELECT count(*) FROM standing_grants`); n != 0 {
		t.Fatalf("%d grants after the backup's refused standing answers", n)
	}
	if s, body := decide(otto, item, "approve"); s != http.StatusOK && s != http.StatusSeeOther {
		t.Fatalf("the backup's approval: %d\n%s", s, body)
	}
	if st := l.status(t, item); st != string(approval.StatusApproved) {
		t.Fatalf("status %s", st)
	}
	if n := count(t, l.Env, `SELECT count(*) FROM standing_grants`); n != 0 {
		t.Fatalf("%d grants after the backup's approval", n)
	}
}

// A check refused because a person's key sent no user writes no "allowed by
// policy" line, though the tool's policy allows it; with the user, one.
func TestRefusedCheckNoPolicyAllowLine(t *testing.T) {
	ctx := context.Background()
	l := newLoop(t)
	if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email", approval.Policy{Mode: approval.ModeAllow}); err != nil {
		t.Fatal(err)
	}
	lines := `SELECT count(*) FROM audit_events WHERE action = '` + approval.ActionAllowedByPolicy + `'`
	call := l.call("mail", "send_email", `{"to":"no-user@example.org"}`)
	delete(call, "user")
	if status, out := l.API(l.Key, http.MethodPost, "/api/v1/tool-calls", call); status != http.StatusBadRequest {
		t.Fatalf("a person's key without user: %d %v, want 400", status, out)
	}
	if n := count(t, l.Env, lines); n != 0 {
		t.Fatalf("%d %q lines for a refused check", n, approval.ActionAllowedByPolicy)
	}

	call = l.call("mail", "send_email", `{"to":"with-user@example.org"}`)
	if call["user"] != dev.DemoMember.Subject {
		t.Fatalf("call user %v", call["user"])
	}
	if out := l.check(t, call); out["decision"] != "allow" {
		t.Fatalf("with user: %v", out)
	}
	n := 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n = count(t, l.Env, lines); n > 0 {
			break
		}
	}
	if n != 1 {
		t.Fatalf("%d %q lines for an allowed check, want 1", n, approval.ActionAllowedByPolicy)
	}
}

// The owner never decides their own call as someone's delegate: a team
// rule (oncall) on mail.send_email; Otto, oncall's member, names Maya as his
// delegate; Maya's own agent asks. Maya gets 404 on the item and cannot
// decide it; Otto decides it.
func TestOwnerNotDelegateOfOwnCallHTTP(t *testing.T) {
	ctx := context.Background()
	l := newLoop(t)
	otto := l.withOncall(t)
	if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email", approval.Policy{
		Mode: approval.ModeRequireApproval, Rule: approval.DeciderRule{Deciders: approval.DecidersTeam, Team: "oncall"}}); err != nil {
		t.Fatal(err)
	}
	if resp, body := otto.PostForm("/settings/away", url.Values{"delegate_email": {dev.DemoMember.Email},
		"until": {awayUntil(3 * time.Hour)}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("Otto names Maya: %d\n%s", resp.StatusCode, body)
	}
	if n := count(t, l.Env, `SELECT count(*) FROM delegations WHERE person_subject = 'demo-otto'
		AND delegate_subject = $1 AND ended_at IS NULL`, dev.DemoMember.Subject); n != 1 {
		t.Fatalf("delegations from Otto to Maya: %d", n)
	}
	item := l.pending(t, l.call("mail", "send_email", `{"to":"own-call@example.org"}`))
	if resp, _ := l.Member.Get("/approvals/" + item); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("Maya reads her own agent's item as Otto's delegate: %d, want 404", resp.StatusCode)
	}
	for _, d := range []string{"approve", "reject"} {
		if s, _ := decide(l.Member, item, d); s != http.StatusNotFound {
			t.Fatalf("Maya's %s of her own agent's item: %d, want 404", d, s)
		}
	}
	if _, inbox := l.Member.Get("/"); contains(inbox, item) {
		t.Fatal("the item is in Maya's inbox")
	}
	if st := l.status(t, item); st != string(approval.StatusPending) {
		t.Fatalf("status %s", st)
	}
	if s, body := decide(otto, item, "approve"); s != http.StatusOK && s != http.StatusSeeOther {
		t.Fatalf("Otto's approval: %d\n%s", s, body)
	}
	if st := l.status(t, item); st != string(approval.StatusApproved) {
		t.Fatalf("status %s", st)
	}
}
