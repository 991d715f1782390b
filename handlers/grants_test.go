package handlers_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/dev"
)

func TestStandingGrants(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	in := func(conv, args string) map[string]any {
		c := l.call("calendar", "create_event", args)
		c["conversation_id"] = conv
		return c
	}

	t.Run("ConversationGrant", func(t *testing.T) {
		id := l.pending(t, in("conv-a", `{"t":1}`))
		decide(l.Member, id, "approve_conversation")
		if out := l.check(t, in("conv-a", `{"t":2}`)); out["decision"] != "allow" || out["via"] != "conversation_grant" {
			t.Fatal("same conversation:", out)
		}
		if out := l.check(t, in("conv-b", `{"t":3}`)); out["decision"] != "pending" {
			t.Fatal("other conversation:", out)
		}
		var n int
		_ = l.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'auto-approved by conversation grant' AND conversation_id = 'conv-a' AND turn_id = 'turn-1'`).Scan(&n)
		if n != 1 {
			t.Fatalf("auto-approval audit lines: %d", n)
		}
	})

	t.Run("AlwaysAllow", func(t *testing.T) {
		id := l.pending(t, in("conv-c", `{"t":4}`))
		decide(l.Member, id, "always")
		if out := l.check(t, in("conv-z", `{"t":5}`)); out["decision"] != "allow" || out["via"] != "always_allow" {
			t.Fatal(out)
		}
		// Another user's calls are not covered.
		c := in("conv-z", `{"t":6}`)
		c["user"] = "someone-else"
		if out := l.check(t, c); out["decision"] != "pending" {
			t.Fatal("grant leaked to another user:", out)
		}
	})

	t.Run("PolicyVersionDecides", func(t *testing.T) {
		// Loosen and tighten again: same mode, new version → grants lapse.
		if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "calendar", "create_event", approval.Policy{Mode: approval.ModeAllow, StandingApproval: true}); err != nil {
			t.Fatal(err)
		}
		if out := l.check(t, in("conv-z", `{"t":7}`)); out["via"] != "policy" {
			t.Fatal(out)
		}
		if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "calendar", "create_event", approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
			t.Fatal(err)
		}
		if out := l.check(t, in("conv-z", `{"t":8}`)); out["decision"] != "pending" {
			t.Fatal("old grant honoured under a new policy version:", out)
		}
		if out := l.check(t, in("conv-a", `{"t":9}`)); out["decision"] != "pending" {
			t.Fatal("old conversation grant honoured:", out)
		}
	})

	t.Run("StandingApprovalRemoved", func(t *testing.T) {
		id := l.pending(t, in("conv-d", `{"t":10}`))
		decide(l.Member, id, "always")
		if out := l.check(t, in("conv-d", `{"t":11}`)); out["decision"] != "allow" {
			t.Fatal(out)
		}
		// Remove standing approval: the grant is ignored and the buttons go.
		if _, err := l.DB.Pool.Exec(ctx, `UPDATE tools SET standing_approval = false WHERE connector = 'calendar' AND name = 'create_event'`); err != nil {
			t.Fatal(err)
		}
		out := l.check(t, in("conv-d", `{"t":12}`))
		if out["decision"] != "pending" {
			t.Fatal("grant used after standing approval was removed:", out)
		}
		if d := out["approval"].(map[string]any)["available_decisions"].([]any); len(d) != 2 {
			t.Fatal("standing buttons still offered:", d)
		}
		// Restoring it does not revive the old grant (the version moved on).
		if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "calendar", "create_event", approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
			t.Fatal(err)
		}
		if out := l.check(t, in("conv-d", `{"t":13}`)); out["decision"] != "pending" {
			t.Fatal("old grant revived:", out)
		}
	})

	t.Run("GrantsNeverInPlaybookRuns", func(t *testing.T) {
		id := l.pending(t, in("conv-e", `{"t":14}`))
		if status, _ := decide(l.Member, id, "always"); status != http.StatusSeeOther {
			t.Fatal("always allow:", status)
		}
		if out := l.check(t, in("conv-f", `{"t":16}`)); out["via"] != "always_allow" {
			t.Fatal("the grant does not hold outside runs:", out)
		}
		// A started run of a playbook that needs no approval: only the rule
		// under test can refuse the call, not an unknown or refused run.
		l.putPlaybook(t, dev.DemoMember.Subject, approval.Definition{Name: "Read mail", Steps: []approval.Step{{ID: "s", Title: "Search",
			WorkType: approval.WorkType{ID: "search", Version: "1"}, Tools: []approval.Pair{{Connector: "mail", Tool: "search_messages"}}}}})
		if status, out := l.enableAPI(t); status != http.StatusOK {
			t.Fatal(status, out)
		}
		status, run := l.startRun(t)
		if status != http.StatusOK {
			t.Fatal(status, run)
		}
		c := in("conv-e", `{"t":15}`)
		c["playbook_run_id"] = run["run_id"]
		if out := l.check(t, c); out["decision"] != "deny" || out["code"] != "approval_unavailable" {
			t.Fatal(out)
		}
	})
}

func TestRepeatedRejections(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	args := `{"path":"/shared/x"}`
	same := func() map[string]any { return l.call("files", "delete_file", args) }
	count := func() int {
		var n int
		_ = l.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM approvals WHERE tool = 'delete_file'`).Scan(&n)
		return n
	}

	// An expiry does not count.
	id := l.pending(t, same())
	if _, err := l.DB.Pool.Exec(ctx, `UPDATE approvals SET expires_at = now() WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB.ExpireDue(ctx, 100); err != nil || l.status(t, id) != "expired" {
		t.Fatal("the first call did not expire:", err)
	}
	for i := 0; i < 2; i++ {
		id := l.pending(t, same())
		if s, _ := decide(l.Member, id, "reject", "reason", "not that folder"); s != http.StatusSeeOther {
			t.Fatal(s)
		}
	}
	before := count()
	out := l.check(t, same())
	if out["decision"] != "deny" || out["code"] != "approval_denied_repeated" || count() != before {
		t.Fatalf("third identical call: %v (items %d → %d)", out, before, count())
	}
	// Different arguments or another turn are asked.
	other := l.call("files", "delete_file", `{"path":"/shared/y"}`)
	if l.check(t, other)["decision"] != "pending" {
		t.Fatal("other arguments not asked")
	}
	nextTurn := same()
	nextTurn["turn_id"] = "turn-2"
	if l.check(t, nextTurn)["decision"] != "pending" {
		t.Fatal("next turn not asked")
	}
	// An approval clears the count: reject, approve, reject → still asked.
	turn3 := func() map[string]any {
		c := same()
		c["turn_id"] = "turn-3"
		return c
	}
	for _, d := range []string{"reject", "approve", "reject"} {
		if s, _ := decide(l.Member, l.pending(t, turn3()), d); s != http.StatusSeeOther {
			t.Fatal(s)
		}
	}
	if out := l.check(t, turn3()); out["decision"] != "pending" {
		t.Fatal("count not cleared by an approval:", out)
	}
	var lines int
	_ = l.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'blocked after repeated rejections'`).Scan(&lines)
	if lines != 1 {
		t.Fatalf("audit lines %d", lines)
	}
}
