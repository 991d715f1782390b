package handlers_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/dev"
)

func (l *loop) putPlaybook(t *testing.T, owner string, def approval.Definition) {
	t.Helper()
	status, out := l.API(l.Key, http.MethodPut, "/api/v1/playbooks/"+dev.DemoPlaybookID, map[string]any{"owner": owner, "definition": def})
	if status != http.StatusOK {
		t.Fatalf("put playbook: %d %v", status, out)
	}
}

func (l *loop) enableAPI(t *testing.T) (int, map[string]any) {
	t.Helper()
	return l.API(l.Key, http.MethodPost, "/api/v1/playbooks/"+dev.DemoPlaybookID+"/enable", nil)
}

func (l *loop) startRun(t *testing.T) (int, map[string]any) {
	t.Helper()
	return l.API(l.Key, http.MethodPost, "/api/v1/playbooks/"+dev.DemoPlaybookID+"/runs", nil)
}

func reasons(out map[string]any) []string {
	e, _ := out["error"].(map[string]any)
	pairs, _ := e["pairs"].([]any)
	var rs []string
	for _, p := range pairs {
		m := p.(map[string]any)
		rs = append(rs, m["connector"].(string)+"."+m["tool"].(string)+": "+m["reason"].(string))
	}
	return rs
}

func TestPlaybookRegistry(t *testing.T) {
	l := newLoop(t)
	def := dev.DemoPlaybook()
	def.Steps[0].Tools = append(def.Steps[0].Tools, approval.Pair{Connector: "mail", Tool: "nope"})
	status, out := l.API(l.Key, http.MethodPut, "/api/v1/playbooks/p1", map[string]any{"owner": "x", "definition": def})
	if status != http.StatusBadRequest || !strings.Contains(out["error"].(map[string]any)["message"].(string), "mail · nope") {
		t.Fatal(status, out)
	}
	status, _ = l.API(l.Key, http.MethodPut, "/api/v1/playbooks/p1", `{"owner":"x","definition":{"name":"n","steps":[],"colour":"red"}}`)
	if status != http.StatusBadRequest {
		t.Fatal("unknown field accepted:", status)
	}
}

func TestPlaybookPreApproval(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
	page := "/playbooks/" + dev.DemoPlaybookID

	// Refused until the owner approves: the two tools that require approval.
	status, out := l.enableAPI(t)
	if status != http.StatusConflict || errCode(out) != "PLAYBOOK_TOOL_APPROVAL_REQUIRED" || len(reasons(out)) != 2 {
		t.Fatal(status, out)
	}
	if status, out := l.startRun(t); status != http.StatusConflict || errCode(out) != approval.CodePlaybookDisabled {
		t.Fatal("run of a disabled playbook:", status, out)
	}

	t.Run("ErrNotOwner", func(t *testing.T) {
		admin := l.NewBrowser()
		admin.SignIn("admin")
		for _, path := range []string{"/approve", "/enable", "/schedule"} {
			if resp, _ := admin.PostForm(page+path, url.Values{"then": {"enable"}}); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("%s by another user: %d", path, resp.StatusCode)
			}
		}
		if _, body := admin.Get(page); !strings.Contains(body, "You can see this playbook but not change it") || strings.Contains(body, `data-testid="approve-tools"`) {
			t.Fatal("admin view is not read-only")
		}
	})

	t.Run("DialogThenApprove", func(t *testing.T) {
		resp, body := l.Member.PostForm(page+"/enable", url.Values{})
		if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "Tool use approval") || strings.Count(body, `data-testid="dialog-pair"`) != 2 {
			t.Fatalf("dialog: %d", resp.StatusCode)
		}
		if !strings.Contains(body, "Send the digest, Book a follow-up") {
			t.Fatal("the dialog does not name the steps using a tool")
		}
		resp, _ = l.Member.PostForm(page+"/approve", url.Values{"then": {"enable"}, "fingerprint": {l.playbookFingerprint(t)}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatal(resp.StatusCode)
		}
		if _, body = l.Member.Get(page); !strings.Contains(body, `data-testid="playbook-state">Enabled`) {
			t.Fatal("not enabled after approval")
		}
		if n := l.countPlaybookRows(t, `SELECT count(*) FROM audit_events WHERE action = 'pre-approval granted'`); n != 2 {
			t.Fatalf("pre-approval audit lines %d (a tool used by two steps needs one approval)", n)
		}
	})

	t.Run("Runs", func(t *testing.T) {
		status, out := l.startRun(t)
		if status != http.StatusOK || len(out["preapproved"].([]any)) != 2 {
			t.Fatal(status, out)
		}
		run := out["run_id"].(string)
		inRun := func(connector, tool, args string) map[string]any {
			c := l.call(connector, tool, args)
			c["playbook_run_id"] = run
			return l.check(t, c)
		}
		if out := inRun("mail", "send_email", `{"to":"f@x"}`); out["decision"] != "allow" || out["via"] != "preapproval" {
			t.Fatal("laid-out pair:", out)
		}
		if out := inRun("mail", "search_messages", `{}`); out["decision"] != "allow" || out["via"] != "policy" {
			t.Fatal("allowed tool:", out)
		}
		// Not laid out, even with an Always allow grant: refused, no prompt.
		l.offerStanding(t, "files", "delete_file")
		if status, _ := decide(l.Member, l.pending(t, l.call("files", "delete_file", `{"p":1}`)), "always"); status != http.StatusSeeOther {
			t.Fatal("always allow:", status)
		}
		if out := l.check(t, l.call("files", "delete_file", `{"p":2}`)); out["via"] != "always_allow" {
			t.Fatal("the Always allow grant does not hold outside runs:", out)
		}
		before := l.countPlaybookRows(t, `SELECT count(*) FROM approvals`)
		out = inRun("files", "delete_file", `{"p":2}`)
		if out["decision"] != "deny" || out["code"] != "approval_unavailable" || !strings.Contains(out["message"].(string), "Weekly invoice digest") {
			t.Fatal("pair not laid out:", out)
		}
		if after := l.countPlaybookRows(t, `SELECT count(*) FROM approvals`); after != before {
			t.Fatal("a run created a pending item")
		}
		if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "system", "run_command", approval.Policy{Mode: approval.ModeBlock}); err != nil {
			t.Fatal(err)
		}
		if out := inRun("system", "run_command", `{}`); out["code"] != "blocked_by_policy" {
			t.Fatal("blocked tool in run:", out)
		}
		if _, body := l.Member.Get(page); !strings.Contains(body, `data-testid="refusal"`) || !strings.Contains(body, "approval_unavailable") {
			t.Fatal("refusal not shown on the playbook page")
		}
	})

	t.Run("PreApprovalAfterStartDoesNotWiden", func(t *testing.T) {
		status, out := l.startRun(t)
		if status != http.StatusOK {
			t.Fatal(status, out)
		}
		run := out["run_id"].(string)
		// The playbook gains a step using delete_file, which the owner approves.
		def := dev.DemoPlaybook()
		def.Steps = append(def.Steps, approval.Step{ID: "tidy", Title: "Tidy", WorkType: approval.WorkType{ID: "files", Version: "1"},
			Tools: []approval.Pair{{Connector: "files", Tool: "delete_file"}}})
		l.putPlaybook(t, dev.DemoMember.Subject, def)
		l.approvePlaybook(t)
		inRun := func(run any) map[string]any {
			c := l.call("files", "delete_file", `{"p":3}`)
			c["playbook_run_id"] = run
			return l.check(t, c)
		}
		// A run started now lays it out, so the approval did take.
		status, out = l.startRun(t)
		if status != http.StatusOK {
			t.Fatal(status, out)
		}
		if out := inRun(out["run_id"]); out["decision"] != "allow" || out["via"] != "preapproval" {
			t.Fatal("a run started after the approval:", out)
		}
		if out := inRun(run); out["decision"] != "deny" || out["code"] != "approval_unavailable" {
			t.Fatal("a later pre-approval widened a running run:", out)
		}
		l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
		l.approvePlaybook(t)
	})

	t.Run("LapseReasons", func(t *testing.T) {
		lapse := func(cause func()) []string {
			cause()
			status, out := l.startRun(t)
			if status != http.StatusConflict || errCode(out) != "PLAYBOOK_TOOL_APPROVAL_REQUIRED" {
				t.Fatal("run after a lapse:", status, out)
			}
			rs := reasons(out)
			l.approvePlaybook(t)
			if status, out := l.startRun(t); status != http.StatusOK {
				t.Fatal("re-approval did not restore runs:", status, out)
			}
			return rs
		}
		// Policy change of one tool: only that pair, with its reason.
		rs := lapse(func() {
			if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "calendar", "create_event", approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
				t.Fatal(err)
			}
		})
		if len(rs) != 1 || rs[0] != "calendar.create_event: "+approval.LapsePolicy {
			t.Fatal(rs)
		}
		// Moving a step keeps approvals; changing instructions lapses all.
		moved := dev.DemoPlaybook()
		moved.Steps[1].Position = approval.Position{X: 999, Y: 1}
		l.putPlaybook(t, dev.DemoMember.Subject, moved)
		if status, _ := l.startRun(t); status != http.StatusOK {
			t.Fatal("moving a step lapsed the approvals")
		}
		contentLapses := func() int {
			return l.countPlaybookRows(t, `SELECT count(*) FROM audit_events WHERE action = 'pre-approval lapsed' AND detail->>'reason' = $1`, approval.LapseContent)
		}
		before := contentLapses()
		rs = lapse(func() {
			d := dev.DemoPlaybook()
			d.Steps[1].Instructions = "Email everyone"
			l.putPlaybook(t, dev.DemoMember.Subject, d)
		})
		if len(rs) != 2 || !strings.HasSuffix(rs[0], approval.LapseContent) || !strings.HasSuffix(rs[1], approval.LapseContent) {
			t.Fatal(rs)
		}
		if lines := contentLapses() - before; lines != 2 {
			t.Fatalf("content lapse audited %d times, want once per pair", lines)
		}
	})

	t.Run("OwnerChange", func(t *testing.T) {
		d := dev.DemoPlaybook()
		d.Steps[1].Instructions = "Email everyone"
		l.putPlaybook(t, dev.DemoAdmin.Subject, d)
		status, out := l.startRun(t)
		if status != http.StatusConflict || errCode(out) != "PLAYBOOK_TOOL_APPROVAL_REQUIRED" {
			t.Fatal("run after an owner change:", status, out)
		}
		rs := reasons(out)
		if len(rs) != 2 || !strings.HasSuffix(rs[0], approval.LapseOwner) {
			t.Fatal(rs)
		}
		// The old owner can't approve any more; the new one must.
		if resp, _ := l.Member.PostForm(page+"/approve", url.Values{}); resp.StatusCode != http.StatusNotFound {
			t.Fatal("old owner approved:", resp.StatusCode)
		}
		admin := l.NewBrowser()
		admin.SignIn("admin")
		if resp, _ := admin.PostForm(page+"/approve", url.Values{"fingerprint": {l.playbookFingerprint(t)}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatal(resp.StatusCode)
		}
		if status, _ := l.startRun(t); status != http.StatusOK {
			t.Fatal("new owner's approval did not restore runs")
		}
	})
}

// countPlaybookRows runs a count(*) query and fails the test if it cannot.
func (l *loop) countPlaybookRows(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := l.DB.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

var htmlTagRE = regexp.MustCompile(`<[^>]*>`)

// visibleText is what a person reads on a page: no tags, entities decoded,
// whitespace collapsed.
func visibleText(body string) string {
	return strings.Join(strings.Fields(html.UnescapeString(htmlTagRE.ReplaceAllString(body, ""))), " ")
}

// approvePlaybook pre-approves the demo playbook's tools as the demo member.
func (l *loop) approvePlaybook(t *testing.T) {
	t.Helper()
	resp, _ := l.Member.PostForm("/playbooks/"+dev.DemoPlaybookID+"/approve", url.Values{"fingerprint": {l.playbookFingerprint(t)}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatal("approve:", resp.StatusCode)
	}
}

// approveAndEnable pre-approves the demo playbook's tools and enables it.
func (l *loop) approveAndEnable(t *testing.T) {
	t.Helper()
	resp, _ := l.Member.PostForm("/playbooks/"+dev.DemoPlaybookID+"/approve", url.Values{"then": {"enable"}, "fingerprint": {l.playbookFingerprint(t)}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatal("approve and enable:", resp.StatusCode)
	}
}

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

// A schedule is parsed wherever it is stored; a bad one stores nothing.
func TestPlaybookScheduleValidated(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	page := "/playbooks/" + dev.DemoPlaybookID
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
	stored := func() (schedule string, enabled bool) {
		t.Helper()
		if err := l.DB.Pool.QueryRow(ctx, `SELECT schedule, enabled FROM playbooks WHERE id = $1`, dev.DemoPlaybookID).Scan(&schedule, &enabled); err != nil {
			t.Fatal(err)
		}
		return schedule, enabled
	}

	t.Run("DialogThenSchedule", func(t *testing.T) {
		resp, body := l.Member.PostForm(page+"/approve", url.Values{"then": {"schedule"}, "schedule": {"not a cron"}})
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(visibleText(body), "That schedule is not a cron expression") {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if s, enabled := stored(); s != "" || enabled {
			t.Fatalf("stored schedule %q, enabled %v", s, enabled)
		}
		if n := l.countPlaybookRows(t, `SELECT count(*) FROM playbook_preapprovals`); n != 0 {
			t.Fatalf("%d pre-approvals granted by a refused form", n)
		}
	})

	t.Run("Store", func(t *testing.T) {
		bad := "not a cron"
		_, err := l.DB.SetPlaybookState(ctx, approval.SystemActor, "", dev.DemoPlaybookID, false, &bad)
		if approval.KindOf(err) != approval.KindUnprocessable {
			t.Fatalf("stored an unparsable schedule: %v", err)
		}
		if s, _ := stored(); s != "" {
			t.Fatalf("stored schedule %q", s)
		}
	})

	t.Run("OK", func(t *testing.T) {
		resp, _ := l.Member.PostForm(page+"/approve", url.Values{"then": {"schedule"}, "schedule": {" 0 9  * * 1-5 "}, "fingerprint": {l.playbookFingerprint(t)}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatal(resp.StatusCode)
		}
		if s, enabled := stored(); s != "0 9 * * 1-5" || !enabled {
			t.Fatalf("stored schedule %q, enabled %v", s, enabled)
		}
	})
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
	want := "Refused Files · Upload file (approval_unavailable) — this tool is not part of the playbook's definition. " +
		"To let runs use it, add a step using files · upload_file to the definition, sync it with PUT /api/v1/playbooks/" +
		dev.DemoPlaybookID + ", then approve it here."
	if !strings.Contains(text, want) {
		t.Fatalf("no way forward for a tool outside the definition: %s", text)
	}
	if strings.Count(text, "not part of the playbook's definition") != 1 ||
		!strings.Contains(text, "Refused Mail · Search messages (blocked_by_policy) — an admin blocks this tool") {
		t.Fatalf("a refusal of a tool the playbook uses reads wrong: %s", text)
	}
}
