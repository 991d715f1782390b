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
