package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// "And any options" from the browser: offered (with its warning) only for
// a command whose options are not known to run other code; posting it for
// npm is refused (422, nothing recorded) because the server proposes the
// scope again from the stored call; chosen for grep, the grant is stored
// with options, said so in words, and covers option words — never a
// hidden character, a wrapper or time.
func TestDecideScopedAnyOptions(t *testing.T) {
	l := newLoop(t)
	shell := func(cmd string) map[string]any {
		return l.call("system", "run_command", `{"command":`+strings.ReplaceAll(`"`+cmd+`"`, "\n", `\n`)+`}`)
	}
	id := l.pending(t, shell("npm test && grep foo src"))
	_, body := l.Member.Get("/")
	if !strings.Contains(body, `value="1:options"`) || !strings.Contains(body, `data-testid="scope-options-warning"`) ||
		!strings.Contains(body, "Option words (starting with -) can change what a command runs") {
		t.Error("the card does not offer any options for grep, with its warning")
	}
	if strings.Contains(body, `value="0:options"`) {
		t.Error("the card offers any options for npm")
	}
	resp, _ := l.Member.PostForm("/approvals/"+id+"/decision", url.Values{"decision": {"always_matching"}, "scope": {"0:options"}})
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("any options for npm: %d, want 422", resp.StatusCode)
	}
	if s := l.status(t, id); s != "pending" {
		t.Fatalf("after a refused scope: %s", s)
	}
	resp, _ = l.Member.PostForm("/approvals/"+id+"/decision", url.Values{"decision": {"always_matching"}, "scope": {"0:none", "1:options"}})
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("decision: %d", resp.StatusCode)
	}
	var words, scope string
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT scope_words, scope::text FROM standing_grants WHERE approval_id = $1`, id).Scan(&words, &scope); err != nil {
		t.Fatal(err)
	}
	if words != "commands starting with `grep foo`, then any words, options included (option words can change what a command runs)" ||
		!strings.Contains(scope, `"options": true`) {
		t.Fatalf("grant covers %q, stored %s", words, scope)
	}
	for _, cmd := range []string{"grep foo -r src", "grep foo --color=never -n src"} {
		if out := l.check(t, shell(cmd)); out["decision"] != "allow" {
			t.Errorf("%q: %v, want allow", cmd, out)
		}
	}
	for _, cmd := range []string{"grep foo -r\\rsrc", "time grep foo -r", "nice grep foo", "grep foo *", "npm test", "grep bar -r"} {
		if out := l.check(t, shell(cmd)); out["decision"] != "pending" {
			t.Errorf("%q: %v, want pending", cmd, out)
		}
	}
	_, page := l.Member.Get("/auto-approve")
	if !strings.Contains(page, "options included (option words can change what a command runs)") {
		t.Error("the Auto-approve tab does not say the grant covers options")
	}
}

// A shell call none of whose commands may be covered falls back to its
// exact arguments; the card keeps the command fixed, and a post that frees
// it is refused.
func TestDecideScopedCommandStaysFixed(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("system", "run_command", `{"command":"sudo rm -rf /","timeout":5}`))
	_, body := l.Member.Get("/")
	if !strings.Contains(body, `data-testid="scope-key-fixed"`) || !strings.Contains(body, `type="hidden" name="scope" value="key:command"`) {
		t.Error("the card does not keep the command fixed")
	}
	resp, _ := l.Member.PostForm("/approvals/"+id+"/decision", url.Values{"decision": {"always_matching"}, "scope": {"key:timeout"}})
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("the command freed: %d, want 422", resp.StatusCode)
	}
	if s := l.status(t, id); s != "pending" {
		t.Fatalf("after a refused scope: %s", s)
	}
}
