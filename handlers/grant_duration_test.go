package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
)

// Standing approvals are time-boxed: the person picks a length up to the
// tool's cap; an ended grant no longer applies, is audited once and shown
// as lapsed with only "Clear".
func TestStandingGrantDuration(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	event := func(conv, args string) map[string]any {
		c := l.call("calendar", "create_event", args)
		c["conversation_id"] = conv
		return c
	}
	grantEnd := func(t *testing.T, approvalID string) *time.Duration {
		t.Helper()
		var left *time.Duration
		if err := l.DB.Pool.QueryRow(ctx, `SELECT expires_at - now() FROM standing_grants WHERE approval_id = $1`, approvalID).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return left
	}
	if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "calendar", "create_event",
		approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true, MaxGrant: 8 * time.Hour}); err != nil {
		t.Fatal(err)
	}

	t.Run("CardOffersUpToTheCap", func(t *testing.T) {
		id := l.pending(t, event("c-card", `{"n":0}`))
		_, body := l.Member.Get("/approvals/" + id)
		opts := regexp.MustCompile(`<option value="(\d+)"( selected)?>`).FindAllStringSubmatch(body, -1)
		var got []string
		for _, o := range opts {
			got = append(got, o[1]+o[2])
		}
		if strings.Join(got, ",") != "3600,28800 selected" {
			t.Fatalf("durations offered: %v", got)
		}
		if !strings.Contains(body, "An admin allows at most 8 hours.") || !strings.Contains(body, "in every conversation") ||
			!strings.Contains(body, "in this conversation only") {
			t.Fatal("the cap or the scope is not said")
		}
		decide(l.Member, id, "reject")
	})
	t.Run("OK", func(t *testing.T) {
		id := l.pending(t, event("c-ok", `{"n":1}`))
		if s, body := decide(l.Member, id, "approve_conversation", "duration", "3600"); s != http.StatusSeeOther {
			t.Fatal(s, body)
		}
		if left := grantEnd(t, id); left == nil || *left < 59*time.Minute || *left > time.Hour {
			t.Fatalf("grant lasts %v, want 1 hour", left)
		}
	})
	t.Run("DefaultIsTheCap", func(t *testing.T) {
		id := l.pending(t, event("c-def", `{"n":2}`))
		mustDecide(t, l.Member, id, "approve_conversation")
		if left := grantEnd(t, id); left == nil || *left < 7*time.Hour || *left > 8*time.Hour {
			t.Fatalf("grant lasts %v, want the cap", left)
		}
	})
	t.Run("ErrOverTheCap", func(t *testing.T) {
		for _, d := range []string{"86400", "0", "-5", "1h", "99999999999"} {
			id := l.pending(t, event("c-over-"+d, `{"n":3}`))
			if s, _ := decide(l.Member, id, "always", "duration", d); s != http.StatusUnprocessableEntity {
				t.Fatalf("duration %q: %d", d, s)
			}
			if l.status(t, id) != "pending" {
				t.Fatal("a refused duration decided the item")
			}
			decide(l.Member, id, "reject")
		}
	})
	t.Run("UntilRevokedWithoutCap", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", `{"to":"x@acme.example"}`))
		_, body := l.Member.Get("/approvals/" + id)
		if !strings.Contains(body, `<option value="0" selected>Until revoked</option>`) {
			t.Fatal("no 'Until revoked' choice without a cap")
		}
		mustDecide(t, l.Member, id, "always")
		if left := grantEnd(t, id); left != nil {
			t.Fatalf("grant without a cap ends in %v", *left)
		}
	})
	t.Run("EndedGrant", func(t *testing.T) {
		id := l.pending(t, event("c-end", `{"n":4}`))
		if s, _ := decide(l.Member, id, "approve_conversation", "duration", "3600"); s != http.StatusSeeOther {
			t.Fatal(s)
		}
		if out := l.check(t, event("c-end", `{"n":5}`)); out["via"] != "conversation_grant" {
			t.Fatal("the grant does not apply before its end:", out)
		}
		_, _ = l.DB.Pool.Exec(ctx, `UPDATE standing_grants SET expires_at = now() - interval '1 second' WHERE approval_id = $1`, id)
		// Ended, even before the sweep has recorded it.
		if out := l.check(t, event("c-end", `{"n":6}`)); out["decision"] != "pending" {
			t.Fatal("an ended grant still applies:", out)
		}
		for i := 0; i < 2; i++ {
			if _, err := l.DB.ExpireDue(ctx, 100); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		_ = l.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'grant expired' AND conversation_id = 'c-end'`).Scan(&n)
		if n != 1 {
			t.Fatalf("grant expired audited %d times, want once", n)
		}
		_, body := l.Member.Get("/auto-approve")
		var row []string
		for _, chunk := range strings.Split(body, "<tr ")[1:] {
			if strings.Contains(chunk, "Its time ran out") {
				row = regexp.MustCompile(`^data-testid="grant-row" data-grant-id="(\d+)"`).FindStringSubmatch(chunk)
				row[0] = chunk[:strings.Index(chunk, "</tr>")]
			}
		}
		if row == nil {
			t.Fatal("the ended grant is not shown as lapsed")
		}
		if strings.Contains(row[0], ">Revoke<") || !strings.Contains(row[0], ">Clear<") || !strings.Contains(row[0], `data-testid="lapsed">Lapsed<`) {
			t.Fatal("a lapsed grant offers Revoke, or no Clear:", row[0])
		}
		if resp, _ := l.Member.PostForm("/auto-approve/"+row[1]+"/clear", url.Values{}); resp.StatusCode != http.StatusSeeOther {
			t.Fatal("clear:", resp.StatusCode)
		}
		if _, body = l.Member.Get("/auto-approve"); strings.Contains(body, `data-grant-id="`+row[1]+`"`) {
			t.Fatal("cleared grant still listed")
		}
	})
	t.Run("ErrClearActive", func(t *testing.T) {
		var active string
		_ = l.DB.Pool.QueryRow(ctx, `SELECT id::text FROM standing_grants WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) LIMIT 1`).Scan(&active)
		if resp, _ := l.Member.PostForm("/auto-approve/"+active+"/clear", url.Values{}); resp.StatusCode != http.StatusNotFound {
			t.Fatal("an active grant was cleared:", resp.StatusCode)
		}
	})
	t.Run("AutoApproveShowsScopeAndEnd", func(t *testing.T) {
		_, body := l.Member.Get("/auto-approve")
		if !strings.Contains(body, "This tool, any arguments, every conversation") || !strings.Contains(body, "Until revoked or the policy changes") ||
			!regexp.MustCompile(`data-testid="grant-ends"><time datetime="[^"]+"`).MatchString(body) {
			t.Fatal("scope or end not shown")
		}
	})
}

// Admins set the longest standing grant per tool on the policy form.
func TestPolicyGrantCap(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	id := toolID(t, l.Env, "calendar", "create_event")
	_, body := admin.Get("/admin/policies/" + id)
	if !strings.Contains(body, `name="max_grant"`) || !strings.Contains(body, `<option value="0" selected>No limit</option>`) {
		t.Fatal("no cap field")
	}
	mustSavePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}, "standing_approval": {"1"}, "max_grant": {"28800"}, "action": {"confirm"}})
	tool, err := l.DB.ToolByID(context.Background(), mustInt(t, id))
	if err != nil || tool.MaxGrant() != 8*time.Hour {
		t.Fatal("cap not saved:", tool.MaxGrant(), err)
	}
	if s, _ := savePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}, "standing_approval": {"1"}, "max_grant": {"soon"}}); s != http.StatusUnprocessableEntity {
		t.Fatal("bad cap:", s)
	}
}

// New tools marked destructiveHint: true start without standing approval,
// and the card says why in one line.
func TestDestructiveToolsStartWithoutStanding(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("files", "delete_file", `{"path":"/tmp/x"}`))
	out := l.check(t, l.call("files", "delete_file", `{"path":"/tmp/y"}`))
	got := out["approval"].(map[string]any)["available_decisions"]
	if len(got.([]any)) != 2 {
		t.Fatal("a new destructive tool offers standing approval:", got)
	}
	_, body := l.Member.Get("/approvals/" + id)
	if !strings.Contains(body, `data-testid="standing-why"`) || !strings.Contains(body, "can’t be undone") {
		t.Fatal("no reason given for the missing standing decisions")
	}
	// The runtime's own word on a non-destructive tool still counts.
	if out := l.check(t, l.call("calendar", "create_event", `{}`)); len(out["approval"].(map[string]any)["available_decisions"].([]any)) != 5 {
		t.Fatal("a non-destructive tool lost standing approval")
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A tool registered with no hints at all is of unknown behaviour: its card
// says so (not "can't be undone"), it offers no standing decision, and the
// admin's Policies screen marks it with the runtime's note of where it was
// first seen.
func TestUnknownBehaviourTool(t *testing.T) {
	l := newLoop(t)
	note := "Unknown behaviour: a Claude Code built-in tool first seen by countersign hook, not in its catalog of Claude Code 2.1.328."
	if status, out := l.putTool(t, "claude-code", "FutureTool", map[string]any{"description": note,
		"connector_kind": "builtin", "connector_display_name": "Claude Code"}); status != http.StatusOK {
		t.Fatal(status, out)
	}
	id := l.pending(t, l.call("claude-code", "FutureTool", `{"x":1}`))
	out := l.check(t, l.call("claude-code", "FutureTool", `{"x":2}`))
	if got := out["approval"].(map[string]any)["available_decisions"].([]any); len(got) != 2 {
		t.Fatal("a tool of unknown behaviour offers standing approval:", got)
	}
	_, body := l.Member.Get("/approvals/" + id)
	if !strings.Contains(body, `data-testid="unknown-behaviour"`) || strings.Contains(body, `data-testid="destructive-warning"`) ||
		strings.Contains(body, `data-testid="sends-out"`) || !strings.Contains(body, "nothing is known of what this tool does") {
		t.Fatal("the card does not say the behaviour is unknown")
	}
	admin := l.NewBrowser()
	admin.SignIn("admin")
	_, page := admin.Get("/admin/policies")
	if !strings.Contains(page, `data-testid="unknown-behaviour"`) || !strings.Contains(page, `data-testid="unknown-note"`) ||
		!strings.Contains(page, "not in its catalog of Claude Code 2.1.328") {
		t.Fatal("the Policies screen does not mark the tool of unknown behaviour")
	}
}
