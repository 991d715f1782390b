package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/dev"
)

// Every refused start leaves a run with its refusal and one audit line,
// and the playbook page says what to do about it.
func TestPlaybookRefusedStartRecorded(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	page := "/playbooks/" + dev.DemoPlaybookID
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
	refusedRuns := func(code string) int {
		return l.countPlaybookRows(t, `SELECT count(*) FROM playbook_runs WHERE playbook_id = $1 AND refused_code = $2`, dev.DemoPlaybookID, code)
	}
	auditLines := func(action string) int {
		return l.countPlaybookRows(t, `SELECT count(*) FROM audit_events WHERE playbook_id = $1 AND action = $2`, dev.DemoPlaybookID, action)
	}
	refusedRunID := func(t *testing.T, out map[string]any) string {
		t.Helper()
		e, _ := out["error"].(map[string]any)
		id, _ := e["run_id"].(string)
		if id == "" || l.countPlaybookRows(t, `SELECT count(*) FROM playbook_runs WHERE id::text = $1 AND refused_code <> ''`, id) != 1 {
			t.Fatalf("the refusal names no recorded run: %v", out)
		}
		return id
	}

	t.Run("Disabled", func(t *testing.T) {
		status, out := l.startRun(t)
		if status != http.StatusConflict || errCode(out) != "playbook_disabled" {
			t.Fatal(status, out)
		}
		refusedRunID(t, out)
		if n := refusedRuns("playbook_disabled"); n != 1 {
			t.Fatalf("%d refused runs recorded", n)
		}
		if n := auditLines(approval.ActionRunRefused); n != 1 {
			t.Fatalf("%d audit lines for the refused start", n)
		}
		_, body := l.Member.Get(page)
		text := visibleText(body)
		if strings.Contains(text, "No runs yet") || !strings.Contains(text, "Refused at start: the playbook is disabled — enable it on this page.") {
			t.Fatalf("the page does not show the refused start: %s", text)
		}
	})

	t.Run("LapsedPreApproval", func(t *testing.T) {
		l.approveAndEnable(t)
		if status, out := l.startRun(t); status != http.StatusOK {
			t.Fatal("run after approval:", status, out)
		}
		if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "calendar", "create_event",
			approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
			t.Fatal(err)
		}
		status, out := l.startRun(t)
		if status != http.StatusConflict || errCode(out) != "PLAYBOOK_TOOL_APPROVAL_REQUIRED" {
			t.Fatal(status, out)
		}
		id := refusedRunID(t, out)
		if n := refusedRuns("PLAYBOOK_TOOL_APPROVAL_REQUIRED"); n != 1 {
			t.Fatalf("%d refused runs recorded", n)
		}
		if n := auditLines(approval.ActionRunRefused); n != 2 {
			t.Fatalf("%d audit lines for two refused starts", n)
		}
		if n := auditLines(approval.ActionRunStarted); n != 1 {
			t.Fatalf("%d run-started lines for one started run", n)
		}
		_, body := l.Member.Get(page)
		text := visibleText(body)
		if !strings.Contains(text, "Refused at start: the pre-approval for Calendar · Create event lapsed because permission settings changed — open Enable to approve it again.") {
			t.Fatalf("the page does not say why the run was refused and what to do: %s", text)
		}

		// The admin reads the same refusal, addressed to the owner.
		admin := l.NewBrowser()
		admin.SignIn("admin")
		if _, body := admin.Get(page); !strings.Contains(visibleText(body), "lapsed because permission settings changed — its owner approves it again with Enable on this page.") {
			t.Fatalf("the admin's page does not show the refused start: %s", visibleText(body))
		}

		// A refused run's id runs nothing, not even a tool policy allows.
		for _, tool := range [][2]string{{"mail", "search_messages"}, {"mail", "send_email"}} {
			c := l.call(tool[0], tool[1], `{}`)
			c["playbook_run_id"] = id
			if out := l.check(t, c); out["decision"] != "deny" || out["code"] != "approval_unavailable" {
				t.Fatalf("%s in a refused run: %v", tool[1], out)
			}
		}
	})
}

// A start refused for a tool whose pre-approval was revoked says so.
func TestPlaybookRefusedStartRevoked(t *testing.T) {
	l := newLoop(t)
	page := "/playbooks/" + dev.DemoPlaybookID
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
	l.approveAndEnable(t)
	resp, _ := l.Member.PostForm(page+"/preapprovals/"+toolID(t, l.Env, "calendar", "create_event")+"/revoke", url.Values{})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatal("revoke:", resp.StatusCode)
	}
	status, out := l.startRun(t)
	if status != http.StatusConflict || errCode(out) != "PLAYBOOK_TOOL_APPROVAL_REQUIRED" {
		t.Fatal(status, out)
	}
	if n := l.countPlaybookRows(t, `SELECT count(*) FROM playbook_runs WHERE refused_code = 'PLAYBOOK_TOOL_APPROVAL_REQUIRED'`); n != 1 {
		t.Fatalf("%d refused runs recorded", n)
	}
	_, body := l.Member.Get(page)
	if text := visibleText(body); !strings.Contains(text, "Refused at start: Calendar · Create event is not pre-approved — open Enable to approve it.") {
		t.Fatalf("the page does not show the refused start: %s", text)
	}
}

// A run refused a tool its playbook does not use is told how to add it.
func TestPlaybookRefusalOutsideDefinition(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	page := "/playbooks/" + dev.DemoPlaybookID
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
	l.approveAndEnable(t)
	status, out := l.startRun(t)
	if status != http.StatusOK {
		t.Fatal(status, out)
	}
	inRun := func(connector, tool string) map[string]any {
		c := l.call(connector, tool, `{}`)
		c["playbook_run_id"] = out["run_id"]
		return l.check(t, c)
	}
	if out := inRun("files", "upload_file"); out["code"] != "approval_unavailable" {
		t.Fatal("tool outside the playbook:", out)
	}
	// A tool the playbook uses, blocked by an admin: refused for that reason.
	if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "mail", "search_messages", approval.Policy{Mode: approval.ModeBlock}); err != nil {
		t.Fatal(err)
	}
	if out := inRun("mail", "search_messages"); out["code"] != "blocked_by_policy" {
		t.Fatal("blocked tool:", out)
	}
	_, body := l.Member.Get(page)
	text := visibleText(body)
	want := "Refused Files · Upload file — this tool is not part of the playbook’s steps. " +
		"To let runs use it, whoever maintains the agent runtime adds a step that uses files · upload_file to the playbook; " +
		"once the runtime has sent the new steps, approve it here."
	if !strings.Contains(text, want) {
		t.Fatalf("no way forward for a tool outside the definition: %s", text)
	}
	// Words a member can act on: never an API path or a raw code.
	for _, raw := range []string{"/api/", "PUT ", "approval_unavailable", "blocked_by_policy"} {
		if strings.Contains(text, raw) {
			t.Errorf("the page shows %q to its member: %s", raw, text)
		}
	}
	if strings.Count(text, "not part of the playbook’s steps") != 1 ||
		!strings.Contains(text, "Refused Mail · Search messages — an admin blocks this tool") {
		t.Fatalf("a refusal of a tool the playbook uses reads wrong: %s", text)
	}
}

// Starts refused one after the other for the same reason read as one line
// with their count; a run that differs keeps its own line, in order.
func TestPlaybookRunsGrouped(t *testing.T) {
	l := newLoop(t)
	page := "/playbooks/" + dev.DemoPlaybookID
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
	for range 3 {
		if status, out := l.startRun(t); status != http.StatusConflict || errCode(out) != "playbook_disabled" {
			t.Fatal(status, out)
		}
	}
	l.approveAndEnable(t)
	if status, out := l.startRun(t); status != http.StatusOK {
		t.Fatal(status, out)
	}
	if resp, _ := l.Member.PostForm(page+"/disable", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatal("disable:", resp.StatusCode)
	}
	for range 10 {
		if status, out := l.startRun(t); status != http.StatusConflict || errCode(out) != "playbook_disabled" {
			t.Fatal(status, out)
		}
	}
	_, body := l.Member.Get(page)
	text := visibleText(body)
	ten := strings.Index(text, "10 runs refused at start: the playbook is disabled — enable it on this page.")
	started := strings.Index(text, "No calls made.")
	three := strings.Index(text, "3 runs refused at start: the playbook is disabled — enable it on this page.")
	if ten < 0 || started < 0 || three < 0 || !(ten < started && started < three) {
		t.Fatalf("the runs are not grouped, newest first (10 refused, 1 started, 3 refused): %s", text)
	}
	if n := strings.Count(body, `data-testid="run-refused"`); n != 2 {
		t.Fatalf("%d refusal lines for two groups", n)
	}
	if strings.Contains(text, "playbook_disabled") {
		t.Fatal("the page shows a raw code")
	}
}
