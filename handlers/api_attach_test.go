package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/dev"
)

// attach is the same call made again: a new call id, possibly a new turn,
// asking to join the item an earlier identical call opened.
func (l *loop) attach(c map[string]any) map[string]any {
	n := l.n.Add(1)
	out := make(map[string]any, len(c)+1)
	for k, v := range c {
		out[k] = v
	}
	out["call_id"] = "retry-" + itoa(n)
	out["attach_to_pending"] = true
	return out
}

func approvalOf(t *testing.T, out map[string]any) map[string]any {
	t.Helper()
	a, ok := out["approval"].(map[string]any)
	if out["decision"] != "pending" || !ok {
		t.Fatalf("want pending, got %v", out)
	}
	return a
}

// TestAttachToPending: the same call made again joins the item it opened,
// while that item is pending or approved and unclaimed — and nothing else.
func TestAttachToPending(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	s := attachCase{l: l, ctx: ctx}
	t.Run("SameItemWhilePending", s.sameItemWhilePending)
	t.Run("ApprovedThenClaimedOnce", s.approvedThenClaimedOnce)
	t.Run("NeverCrosses", s.neverCrosses)
	t.Run("NeverRevivesEndedItems", s.neverRevivesEndedItems)
	t.Run("DoesNotBypassBlockOrRun", s.doesNotBypassBlockOrRun)
	t.Run("WithoutFlagUnchanged", s.withoutFlagUnchanged)
	t.Run("ErrFlagNotBoolean", s.errFlagNotBoolean)
}

// attachCase is the loop TestAttachToPending's cases attach calls in.
type attachCase struct {
	l   *loop
	ctx context.Context
}

func (s attachCase) sameItemWhilePending(t *testing.T) {
	l := s.l
	first := l.call("mail", "send_email", `{"to":"p@acme.example"}`)
	first["attach_to_pending"] = true
	id := l.pending(t, first)
	retry := l.attach(first)
	retry["turn_id"] = "turn-2"
	a := approvalOf(t, l.check(t, retry))
	if a["id"] != id || a["call_id"] != first["call_id"] || a["status"] != "pending" ||
		a["arguments_digest"] != approval.Digest(`{"to":"p@acme.example"}`) {
		t.Fatalf("retry did not join item %s: %v", id, a)
	}
	if a["url"] != l.BaseURL+"/approvals/"+id {
		t.Fatalf("url %v", a["url"])
	}
	if n := l.auditCount(t, id, "approval requested"); n != 1 {
		t.Fatalf("asked %d times", n)
	}
}

func (s attachCase) approvedThenClaimedOnce(t *testing.T) {
	l := s.l
	args := `{"to":"once@acme.example"}`
	first := l.call("mail", "send_email", args)
	id := l.pending(t, first)
	if status, _ := decide(l.Member, id, "approve"); status != http.StatusSeeOther {
		t.Fatal(status)
	}
	retry := l.attach(first)
	a := approvalOf(t, l.check(t, retry))
	if a["id"] != id || a["status"] != "approved" || a["call_id"] != first["call_id"] {
		t.Fatalf("retry after approval: %v", a)
	}
	claim := map[string]string{"call_id": a["call_id"].(string), "arguments_digest": approval.Digest(args)}
	if status, out := l.API(l.Key, http.MethodPost, "/api/v1/approvals/"+id+"/claim", claim); status != http.StatusOK || out["status"] != "consumed" {
		t.Fatal(status, out)
	}
	// Consumed: a third identical call opens a new item.
	if a := approvalOf(t, l.check(t, l.attach(first))); a["id"] == id || a["status"] != "pending" {
		t.Fatalf("joined a consumed item: %v", a)
	}
	if n := l.auditCount(t, id, "claimed"); n != 1 {
		t.Fatalf("%d claims", n)
	}
}

func (s attachCase) neverCrosses(t *testing.T) {
	l := s.l
	args := `{"to":"cross@acme.example"}`
	first := l.call("mail", "send_email", args)
	id := l.pending(t, first)
	other := l.APIKey()
	for name, change := range map[string]func(map[string]any){
		"user":         func(c map[string]any) { c["user"] = dev.DemoAdmin.Subject },
		"conversation": func(c map[string]any) { c["conversation_id"] = "conv-other" },
		"tool":         func(c map[string]any) { c["connector"], c["tool"] = "system", "run_command" },
		"digest":       func(c map[string]any) { c["arguments"] = `{"to":"cross2@acme.example"}` },
	} {
		c := l.attach(first)
		change(c)
		if a := approvalOf(t, l.check(t, c)); a["id"] == id {
			t.Fatalf("attach crossed %s", name)
		}
	}
	status, out := l.API(other, http.MethodPost, "/api/v1/tool-calls", l.attach(first))
	if status != http.StatusOK || approvalOf(t, out)["id"] == id {
		t.Fatalf("attach crossed keys: %d %v", status, out)
	}
}

func (s attachCase) neverRevivesEndedItems(t *testing.T) {
	l, ctx := s.l, s.ctx
	ends := map[string]func(id string, c map[string]any){
		"rejected": func(id string, _ map[string]any) { decide(l.Member, id, "reject") },
		"expired": func(id string, _ map[string]any) {
			if _, err := l.DB.Pool.Exec(ctx, `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
			if err := l.DB.ExpireIfDue(ctx, id); err != nil {
				t.Fatal(err)
			}
		},
		"cancelled": func(_ string, c map[string]any) {
			if _, err := l.Client.CancelTurn(ctx, dev.DemoMember.Subject, "conv-1", c["turn_id"].(string)); err != nil {
				t.Fatal(err)
			}
		},
	}
	for status, end := range ends {
		first := l.call("mail", "send_email", `{"to":"`+status+`@acme.example"}`)
		first["turn_id"] = "turn-" + status
		id := l.pending(t, first)
		end(id, first)
		if got := l.status(t, id); got != status {
			t.Fatalf("setup: %s, want %s", got, status)
		}
		retry := l.attach(first)
		retry["turn_id"] = "turn-later-" + status
		if a := approvalOf(t, l.check(t, retry)); a["id"] == id || a["status"] != "pending" {
			t.Fatalf("revived a %s item: %v", status, a)
		}
	}
}

func (s attachCase) doesNotBypassBlockOrRun(t *testing.T) {
	l, ctx := s.l, s.ctx
	first := l.call("calendar", "create_event", `{"title":"x"}`)
	id := l.pending(t, first)
	run := l.attach(first)
	run["playbook_run_id"] = "3f1c2a4e-0000-4000-8000-000000000000"
	if out := l.check(t, run); out["decision"] != "deny" || out["code"] != "approval_unavailable" {
		t.Fatalf("attach inside a run: %v", out)
	}
	if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "calendar", "create_event", approval.Policy{Mode: approval.ModeBlock}); err != nil {
		t.Fatal(err)
	}
	if out := l.check(t, l.attach(first)); out["decision"] != "deny" || out["code"] != "blocked_by_policy" {
		t.Fatalf("attach to item %s of a blocked tool: %v", id, out)
	}
}

func (s attachCase) withoutFlagUnchanged(t *testing.T) {
	l := s.l
	first := l.call("mail", "send_email", `{"to":"plain@acme.example"}`)
	id := l.pending(t, first)
	again := l.attach(first)
	delete(again, "attach_to_pending")
	if a := approvalOf(t, l.check(t, again)); a["id"] == id || a["call_id"] != again["call_id"] {
		t.Fatalf("a plain call joined another call's item: %v", a)
	}
}

func (s attachCase) errFlagNotBoolean(t *testing.T) {
	l := s.l
	c := l.call("mail", "send_email", `{}`)
	c["attach_to_pending"] = "yes"
	status, out := l.API(l.Key, http.MethodPost, "/api/v1/tool-calls", c)
	msg, _ := out["error"].(map[string]any)["message"].(string)
	if status != http.StatusBadRequest || !strings.Contains(msg, "attach_to_pending") {
		t.Fatal(status, out)
	}
}

// TestApprovalURL: the check answer and the item both link to its page.
func TestApprovalURL(t *testing.T) {
	l := newLoop(t)
	c := l.call("mail", "send_email", `{"to":"u@acme.example"}`)
	a := approvalOf(t, l.check(t, c))
	id := a["id"].(string)
	want := l.BaseURL + "/approvals/" + id
	if a["url"] != want || a["call_id"] != c["call_id"] {
		t.Fatalf("check answer: %v", a)
	}
	status, out := l.API(l.Key, http.MethodGet, "/api/v1/approvals/"+id, nil)
	if status != http.StatusOK || out["url"] != want {
		t.Fatal(status, out)
	}
}
