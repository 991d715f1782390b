package handlers_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/dev"
)

const marker = "MARKER-7731"

// TestAuditScenario walks every action once and asserts the exact lines,
// and that no line carries argument contents or a reviewer's words.
func TestAuditScenario(t *testing.T) {
	l := newLoop(t) // sign-in (member), api key created, connector synced ×5
	ctx := context.Background()
	admin := l.NewBrowser()
	admin.SignIn("admin") // sign-in
	args := func(n int) string { return `{"to":"` + marker + `","n":` + string(rune('0'+n)) + `}` }
	conv := func(c string, call map[string]any) map[string]any { call["conversation_id"] = c; return call }

	id := l.pending(t, l.call("mail", "send_email", args(1))) // requested
	decide(l.Member, id, "approve")                           // approved
	status, _ := l.API(l.Key, http.MethodPost, "/api/v1/approvals/"+id+"/claim", map[string]string{"call_id": "call-1", "arguments_digest": approval.Digest(args(1))})
	if status != http.StatusOK { // claimed
		t.Fatal(status)
	}
	// The same call through a second guard (the MCP gateway in front of the
	// tool the hook asked about): it joins the item instead of asking again.
	second := l.call("mail", "send_email", args(1))
	second["call_id"], second["conversation_id"], second["attach_to_pending"] = "call-1", "mcp/mail/1", true
	if out := l.check(t, second); out["decision"] != "allow" || out["via"] != "joined" { // joined by another guard, claimed
		t.Fatal("the second guard's check:", out)
	}
	l.check(t, l.call("mail", "search_messages", args(0)))                                                          // allowed by policy
	decide(l.Member, l.pending(t, conv("c2", l.call("calendar", "create_event", args(2)))), "approve_conversation") // requested, approved for conversation
	l.check(t, conv("c2", l.call("calendar", "create_event", args(3))))                                             // auto-approved by conversation grant
	l.offerStanding(t, "mail", "delete_message")
	decide(l.Member, l.pending(t, conv("c3", l.call("mail", "delete_message", args(4)))), "always")            // requested, always allowed
	l.check(t, conv("c4", l.call("mail", "delete_message", args(5))))                                          // auto-approved by Always allow
	decide(l.Member, l.pending(t, conv("c5", l.call("calendar", "create_event", args(1)))), "always_matching") // requested, always allowed calls like this
	l.check(t, conv("c6", l.call("calendar", "create_event", args(1))))                                        // auto-approved by a scoped grant
	// The model tries the same arguments again after each rejection: every
	// try is a new call (a new call id), in the same turn.
	for i := 0; i < 2; i++ {
		decide(l.Member, l.pending(t, l.call("files", "delete_file", args(6))), "reject", "reason", marker+" not this file") // requested, rejected ×2
	}
	l.check(t, l.call("files", "delete_file", args(6)))          // blocked after repeated rejections
	exp := l.pending(t, l.call("files", "upload_file", args(7))) // requested
	_, _ = l.DB.Pool.Exec(ctx, `UPDATE approvals SET expires_at = now() WHERE id = $1`, exp)
	_, _ = l.DB.Pool.Exec(ctx, `UPDATE standing_grants SET expires_at = now() WHERE conversation_id = 'c2'`)
	if _, err := l.DB.ExpireDue(ctx, 10); err != nil { // expired, grant expired
		t.Fatal(err)
	}
	can := l.call("web", "open_page", args(8))
	can["turn_id"] = "turn-x"
	l.pending(t, can)                                                                               // requested
	if _, err := l.Client.CancelTurn(ctx, dev.DemoMember.Subject, "conv-1", "turn-x"); err != nil { // cancelled
		t.Fatal(err)
	}
	var grant string
	_ = l.DB.Pool.QueryRow(ctx, `SELECT id::text FROM standing_grants WHERE conversation_id IS NULL`).Scan(&grant)
	l.Member.PostForm("/auto-approve/"+grant+"/revoke", url.Values{}) // grant revoked
	sysID := toolID(t, l.Env, "system", "run_command")
	savePolicy(t, admin, l.Env, sysID, url.Values{"mode": {"block"}})                              // policy changed
	l.check(t, l.call("system", "run_command", args(9)))                                           // blocked by policy
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())                                   // playbook registered
	l.Member.PostForm("/playbooks/"+dev.DemoPlaybookID+"/approve", approveCurrentDefinition(t, l)) // pre-approval granted ×2, playbook enabled
	_, out := l.startRun(t)                                                                        // playbook run started
	run := out["run_id"].(string)
	inRun := l.call("mail", "send_email", args(1))
	inRun["playbook_run_id"] = run
	l.check(t, inRun) // allowed by pre-approval
	refused := l.call("files", "delete_file", args(2))
	refused["playbook_run_id"] = run
	l.check(t, refused) // refused in unattended run
	calID := toolID(t, l.Env, "calendar", "create_event")
	l.Member.PostForm("/playbooks/"+dev.DemoPlaybookID+"/preapprovals/"+calID+"/revoke", url.Values{}) // pre-approval revoked
	mailID := toolID(t, l.Env, "mail", "send_email")
	savePolicy(t, admin, l.Env, mailID, url.Values{"mode": {"require_approval"}, "standing_approval": {"1"}, "condition": {"size(args.to) > 0"}}) // policy changed, pre-approval lapsed
	l.Member.PostForm("/playbooks/"+dev.DemoPlaybookID+"/disable", url.Values{})                                                                  // playbook disabled
	// playbook run refused (disabled):
	if status, _ := l.startRun(t); status != http.StatusConflict {
		t.Fatal("run of a disabled playbook:", status)
	}
	// tool registered:
	if status, _ := l.putTool(t, "web", "save_page", map[string]any{}); status != http.StatusOK {
		t.Fatal(status)
	}
	d2 := dev.DemoPlaybook()
	d2.Instructions = "changed"
	l.putPlaybook(t, dev.DemoMember.Subject, d2)                                   // playbook updated
	if err := l.DB.DeleteConnector(ctx, approval.SystemActor, "web"); err != nil { // connector deleted
		t.Fatal(err)
	}
	l.passkeyScenario(t, admin)                                                                                            // passkeys (issue 33)
	admin.PostForm("/admin/teams", url.Values{"name": {"audit-team"}})                                                     // team created
	admin.PostForm("/admin/teams/description", url.Values{"team": {"audit-team"}, "description": {"Reviews"}})             // team changed
	admin.PostForm("/admin/teams/members", url.Values{"team": {"audit-team"}, "subject": {dev.DemoMember.Subject}})        // team member added
	admin.PostForm("/admin/teams/members/remove", url.Values{"team": {"audit-team"}, "subject": {dev.DemoMember.Subject}}) // team member removed
	if _, err := l.DB.Pool.Exec(ctx, `INSERT INTO teams (name, source) VALUES ('oncall', 'admin')`); err != nil {
		t.Fatal(err)
	}
	esc := l.pending(t, conv("c7", l.call("files", "upload_file", args(3)))) // requested
	_, _ = l.DB.Pool.Exec(ctx, `UPDATE approvals SET escalate_to = 'oncall', escalate_after_seconds = 1, escalate_at = now() WHERE id = $1`, esc)
	if _, err := l.DB.EscalateDue(ctx, 10); err != nil { // escalated
		t.Fatal(err)
	}
	l.Member.PostForm("/settings/away", url.Values{"delegate_email": {dev.DemoAdmin.Email}, "until": {awayUntil(time.Hour)}}) // delegation started
	d, _, _ := l.DB.DelegationOf(ctx, l.User(dev.DemoMember.Subject).ID)
	admin.PostForm("/admin/delegations/"+itoa(d.ID)+"/end", url.Values{}) // delegation ended
	keys, _ := l.DB.ListAPIKeys(ctx)
	admin.PostForm("/admin/api-keys/"+itoa(keys[0].ID)+"/first-time-users", url.Values{"allow": {"no"}}) // api key changed
	admin.PostForm("/admin/api-keys/"+itoa(keys[0].ID)+"/revoke", url.Values{"confirm": {"yes"}})        // api key revoked
	// api key renamed: written only by migration 00031, to keys of one owner that shared a name.
	if _, err := l.DB.Pool.Exec(ctx, `INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, detail, api_key_id)
		VALUES ('system', 'system', 'system', 'api key renamed', jsonb_build_object('key_id', $1::bigint, 'old_name', 'x', 'key_name', 'x (#1)'), $1)`,
		keys[0].ID); err != nil {
		t.Fatal(err)
	}
	l.Member.PostForm("/auth/logout", url.Values{}) // sign-out

	want := map[string]int{
		"sign-in": 2, "api key created": 1, "connector synced": 5, "approval requested": 9, "approved": 1, "claimed": 2, "joined by another guard": 1,
		"approved for conversation": 1, "auto-approved by conversation grant": 1, "always allowed": 1,
		"auto-approved by Always allow": 1, "always allowed calls like this": 1, "auto-approved by a scoped grant": 1, "rejected": 2, "blocked after repeated rejections": 1, "expired": 1,
		"cancelled": 1, "grant revoked": 1, "grant expired": 1, "policy changed": 2, "blocked by policy": 1, "playbook registered": 1,
		"pre-approval granted": 2, "playbook enabled": 1, "playbook run started": 1, "playbook run refused": 1, "allowed by pre-approval": 1,
		"refused in unattended run": 1, "pre-approval revoked": 1, "pre-approval lapsed": 1, "playbook disabled": 1,
		"playbook updated": 1, "api key changed": 1, "api key revoked": 1, "api key renamed": 1, "sign-out": 1, "connector deleted": 1,
		"tool registered": 1, "team created": 1, "team changed": 1, "team member added": 1, "team member removed": 1, "allowed by policy": 1,
		"escalated": 1, "delegation started": 1, "delegation ended": 1,
		// passkeyScenario: one more request and policy change.
		"passkey added": 2, "passkey removed": 1, "passkeys reset": 1, "approval refused without passkey": 1,
	}
	want["approval requested"]++
	want["policy changed"]++
	got := map[string]int{}
	for _, a := range l.AuditActions() {
		got[a]++
	}
	if diff := diffCounts(got, want); diff != "" {
		t.Fatalf("audit lines differ from the scenario:\n%s", diff)
	}
	for _, a := range approval.AllActions {
		if want[a] == 0 {
			t.Errorf("the scenario does not cover %q", a)
		}
	}
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := l.DB.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The same search finds the marker where it belongs (the items' previews
	// and the reviewer's reasons), so it can find it in the audit log.
	if n := count(`SELECT count(*) FROM approvals a WHERE strpos(row_to_json(a)::text, $1) > 0`, marker); n == 0 {
		t.Fatal("the marker search finds nothing even in the approvals it was sent with")
	}
	if leaks := count(`SELECT count(*) FROM audit_events e WHERE strpos(row_to_json(e)::text, $1) > 0`, marker); leaks != 0 {
		t.Fatalf("%d audit lines contain argument contents or a reviewer's words", leaks)
	}
	if count(`SELECT count(*) FROM audit_events WHERE action = 'rejected' AND detail->>'reason_given' = 'true'`) != 2 {
		t.Fatal("a rejection line does not record that a reason was given")
	}
	if count(`SELECT count(*) FROM audit_events WHERE action = 'auto-approved by conversation grant'
		AND actor_kind = 'api_key' AND connector = 'calendar' AND tool = 'create_event' AND conversation_id = 'c2' AND turn_id = 'turn-1'`) != 1 {
		t.Fatal("auto-approval line lacks its fields")
	}
	if err := l.DB.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := l.DB.VerifyAudit(ctx)
	if err != nil || !r.Intact || r.Events == 0 {
		t.Fatal(r, err)
	}
}

func diffCounts(got, want map[string]int) string {
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if got[k] != want[k] {
			b.WriteString("  " + k + ": got " + itoa(int64(got[k])) + ", want " + itoa(int64(want[k])) + "\n")
		}
	}
	return b.String()
}

func TestAuditScreen(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	for _, path := range []string{"/admin/audit", "/admin/audit.csv", "/admin/audit/verify", "/admin/insights"} {
		if resp, _ := l.Member.Get(path); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s for a member: %d", path, resp.StatusCode)
		}
	}
	for i := 0; i < 60; i++ {
		decide(l.Member, l.pending(t, l.call("calendar", "create_event", `{"i":`+itoa(int64(i))+`}`)), "approve")
	}
	q := url.Values{"action": {"approved"}, "tool": {"create_event"}}
	resp, body := admin.Get("/admin/audit?" + q.Encode())
	if resp.StatusCode != http.StatusOK || strings.Count(body, `data-testid="audit-line"`) != 50 {
		t.Fatalf("first page: %d, %d lines", resp.StatusCode, strings.Count(body, `data-testid="audit-line"`))
	}
	// Each line is a table row: absolute time, actor, action, the tool by
	// its display name, where.
	row := body[strings.Index(body, `data-testid="audit-line"`):]
	row = visibleText(strings.ReplaceAll("<tr "+row[:strings.Index(row, "</tr>")], "</td>", " | "))
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d( Not sealed yet)? \| Maya Member \| approved \| Calendar · Create event ?calendar · create_event \| conversation conv-1, turn turn-1 \|`).MatchString(row) {
		t.Fatalf("line not in columns: %q", row)
	}
	older := regexp.MustCompile(`href="([^"]+)" rel="next" data-testid="older"`).FindStringSubmatch(body)
	if older == nil {
		t.Fatal("no older link")
	}
	_, page2 := admin.Get(strings.ReplaceAll(older[1], "&amp;", "&"))
	if strings.Count(page2, `data-testid="audit-line"`) != 10 || strings.Contains(page2, `data-testid="older"`) || !strings.Contains(page2, `data-testid="newer"`) {
		t.Fatal("second page")
	}
	// The CSV of the filter equals the screen's lines.
	resp, csvBody := admin.Get("/admin/audit.csv?" + q.Encode())
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatal(resp.StatusCode)
	}
	records, err := csv.NewReader(strings.NewReader(csvBody)).ReadAll()
	if err != nil || len(records) != 61 {
		t.Fatalf("csv rows %d %v", len(records), err)
	}
	screenIDs := regexp.MustCompile(`data-testid="audit-line" data-id="(\d+)"`).FindAllStringSubmatch(body+page2, -1)
	if len(screenIDs) != 60 {
		t.Fatalf("%d line ids on the screen, want 60", len(screenIDs))
	}
	for i, m := range screenIDs {
		if records[i+1][0] != m[1] || records[i+1][6] != "approved" {
			t.Fatalf("csv row %d = %v, screen id %s", i, records[i+1][:7], m[1])
		}
	}
	if err := l.DB.SealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, body := admin.Get("/admin/audit/verify"); !strings.Contains(body, "chain intact") || !strings.Contains(body, "no unsealed events") {
		t.Fatal("verify page")
	}
	// 60 of 60 approved → candidate to loosen; 5 of 5 expired → reroute.
	for i := 0; i < 5; i++ {
		id := l.pending(t, l.call("files", "upload_file", `{"i":`+itoa(int64(i))+`}`))
		_, _ = l.DB.Pool.Exec(context.Background(), `UPDATE approvals SET expires_at = now() WHERE id = $1`, id)
	}
	if _, err := l.DB.ExpireDue(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	resp, body = admin.Get("/admin/insights?window=7d")
	if resp.StatusCode != http.StatusOK || strings.Count(body, `data-testid="loosen"`) != 1 || strings.Count(body, `data-testid="reroute"`) != 1 {
		t.Fatalf("insights signals: %d", resp.StatusCode)
	}
	if !strings.Contains(body, "100% (60)") || !strings.Contains(body, `data-testid="insights-chart"`) {
		t.Fatal("insights figures")
	}
}

// TestAuditExportStreams exports 200,000 lines and watches the server's
// heap: it must not hold the file.
func TestAuditExportStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("200k rows")
	}
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	ctx := context.Background()
	start := time.Now()
	if _, err := l.DB.Pool.Exec(ctx, `INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool, conversation_id, turn_id, detail)
		SELECT 'user', 'u', 'Someone with a long display name', 'approved', 'mail', 'send_email', 'conversation-' || g, 'turn-' || g,
			jsonb_build_object('n', g, 'padding', repeat('x', 100)) FROM generate_series(1, 200000) g`); err != nil {
		t.Fatal(err)
	}
	t.Logf("inserted 200,000 chained events in %s", time.Since(start).Round(time.Millisecond))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	req, _ := http.NewRequest(http.MethodGet, l.BaseURL+"/admin/audit.csv?action=approved", nil)
	admin.Client.Timeout = 0
	start = time.Now()
	resp, err := admin.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rows, bytes := 0, 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		rows++
		bytes += len(sc.Bytes())
	}
	resp.Body.Close()
	close(done)
	if rows != 200001 {
		t.Fatalf("rows %d", rows)
	}
	growth := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("exported %d rows, %.1f MiB in %s; heap grew at most %.1f MiB", rows, float64(bytes)/(1<<20), time.Since(start).Round(time.Millisecond), float64(growth)/(1<<20))
	if growth > int64(bytes)/2 {
		t.Fatalf("heap grew %d bytes for a %d-byte export: not streaming", growth, bytes)
	}
}
