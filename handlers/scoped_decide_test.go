package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// "Always allow calls like this" from the browser: the card shows the
// proposed scope and the form posts only choices within it; a choice the
// server did not offer is refused (422) and records nothing; a narrowed
// choice is what the grant covers.
func TestDecideScoped(t *testing.T) {
	l := newLoop(t)
	shell := func(cmd string) map[string]any {
		return l.call("system", "run_command", `{"command":`+strings.ReplaceAll(`"`+cmd+`"`, "\n", `\n`)+`}`)
	}
	id := l.pending(t, shell("npm test -- --watch && git status"))
	_, body := l.Member.Get("/")
	for _, want := range []string{`data-testid="scoped"`, `value="0:prefix"`, `value="0:exact"`, `value="1:prefix"`,
		`name="decision" value="always_matching"`, "commands starting with npm test"} {
		if !strings.Contains(body, want) {
			t.Errorf("the card lacks %s", want)
		}
	}
	for _, bad := range [][]string{{"0:wider"}, {"0:prefix", "0:exact"}, {"key:command"}, {"0:none", "1:none"}} {
		resp, _ := l.Member.PostForm("/approvals/"+id+"/decision", url.Values{"decision": {"always_matching"}, "scope": bad})
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("scope %v: %d, want 422", bad, resp.StatusCode)
		}
	}
	if s := l.status(t, id); s != "pending" {
		t.Fatalf("after refused scopes: %s", s)
	}
	// A scope in the query string is not read.
	resp, _ := l.Member.PostForm("/approvals/"+id+"/decision?scope=0:wider", url.Values{"decision": {"always_matching"},
		"scope": {"0:exact", "1:none"}})
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("decision: %d", resp.StatusCode)
	}
	var words string
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT scope_words FROM standing_grants WHERE approval_id = $1`, id).Scan(&words); err != nil {
		t.Fatal(err)
	}
	if words != "commands exactly `npm test -- --watch`" {
		t.Fatalf("grant covers %q", words)
	}
	if out := l.check(t, shell("npm test -- --watch")); out["decision"] != "allow" || out["via"] != "always_allow" {
		t.Fatalf("the exact command: %v", out)
	}
	for _, cmd := range []string{"npm test", "git status", "npm test -- --watch && git status"} {
		if out := l.check(t, shell(cmd)); out["decision"] != "pending" {
			t.Errorf("%q: %v, want pending", cmd, out)
		}
	}
	_, page := l.Member.Get("/auto-approve")
	if !strings.Contains(page, "Calls like this: ") || !strings.Contains(page, `<code><bdi class="untrusted">npm test -- --watch</bdi></code>`) {
		t.Error("the Auto-approve tab does not say what the grant covers")
	}
}

// The policy form's matchable: the page shows it, an unticked box (the
// hidden "0" alone) turns it off and the tool's items stop offering
// "Always allow calls like this"; a form without the field keeps it. The
// tool's page lists its scoped grants, and an admin's Revoke ends one
// (audited); members cannot reach it.
func TestPolicyMatchable(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	id := toolID(t, l.Env, "system", "run_command")
	matchable := func() bool {
		var m bool
		if err := l.DB.Pool.QueryRow(context.Background(), `SELECT matchable FROM tools WHERE id = $1`, id).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	item := l.pending(t, l.call("system", "run_command", `{"command":"go vet ./..."}`))
	decide(l.Member, item, "always_matching")
	_, page := admin.Get("/admin/policies/" + id)
	if !strings.Contains(page, `name="matchable" value="1" checked`) || !strings.Contains(page, `data-testid="scoped-grant-row"`) ||
		!strings.Contains(page, `<code><bdi class="untrusted">go vet</bdi></code>`) {
		t.Fatal("the policy page lacks matchable or the scoped grant")
	}
	var grant string
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM standing_grants WHERE approval_id = $1`, item).Scan(&grant); err != nil {
		t.Fatal(err)
	}
	if resp, _ := l.Member.PostForm("/admin/policies/"+id+"/grants/"+grant+"/revoke", url.Values{}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a member revoking from the admin page: %d", resp.StatusCode)
	}
	if out := l.check(t, l.call("system", "run_command", `{"command":"go vet ./x"}`)); out["decision"] != "allow" {
		t.Fatalf("under the scoped grant: %v", out)
	}
	if resp, _ := admin.PostForm("/admin/policies/"+id+"/grants/"+grant+"/revoke", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("admin revoke: %d", resp.StatusCode)
	}
	var revoked int
	_ = l.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE action = 'grant revoked' AND detail->>'how' = 'revoked by an admin'`).Scan(&revoked)
	if revoked != 1 {
		t.Fatalf("%d admin revocations audited", revoked)
	}
	if out := l.check(t, l.call("system", "run_command", `{"command":"go vet ./x"}`)); out["decision"] != "pending" {
		t.Fatalf("after the admin's Revoke: %v", out)
	}
	if s, _ := savePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}, "condition": {"size(args) > 5"}}); s != http.StatusSeeOther {
		t.Fatalf("save: %d", s)
	}
	if !matchable() {
		t.Fatal("a form without the field turned matchable off")
	}
	savePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}, "matchable": {"0"}})
	if matchable() {
		t.Fatal("unticked, matchable stayed on")
	}
	out := l.check(t, l.call("system", "run_command", `{"command":"go vet ./y"}`))
	if d := out["approval"].(map[string]any)["available_decisions"].([]any); len(d) != 2 {
		t.Fatalf("decisions with matchable off: %v", d)
	}
	savePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}, "matchable": {"0", "1"}})
	if !matchable() {
		t.Fatal("ticked, matchable stayed off")
	}
}
