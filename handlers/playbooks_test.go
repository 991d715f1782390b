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

	s := preApproval{l: l, ctx: ctx, page: page}
	t.Run("ErrNotOwner", s.errNotOwner)
	t.Run("DialogThenApprove", s.dialogThenApprove)
	t.Run("Runs", s.runs)
	t.Run("PreApprovalAfterStartDoesNotWiden", s.preApprovalAfterStartDoesNotWiden)
	t.Run("LapseReasons", s.lapseReasons)
	t.Run("OwnerChange", s.ownerChange)
}

// preApproval is the demo playbook's set-up, shared by
// TestPlaybookPreApproval's steps in turn.
type preApproval struct {
	l    *loop
	ctx  context.Context
	page string
}

func (s preApproval) errNotOwner(t *testing.T) {
	l, page := s.l, s.page
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
}

func (s preApproval) dialogThenApprove(t *testing.T) {
	l, page := s.l, s.page
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
}

func (s preApproval) runs(t *testing.T) {
	l, ctx, page := s.l, s.ctx, s.page
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
}

func (s preApproval) preApprovalAfterStartDoesNotWiden(t *testing.T) {
	l := s.l
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
}

func (s preApproval) lapseReasons(t *testing.T) {
	l, ctx := s.l, s.ctx
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
}

func (s preApproval) ownerChange(t *testing.T) {
	l, page := s.l, s.page
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
