package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
)

// The claim's answer carries the scoped grant the person confirmed ("any
// options" or not, its rules as stored), only for "Always allow calls like
// this", and not once the grant is revoked.
func TestClaimCarriesConfirmedGrant(t *testing.T) {
	l := newLoop(t)
	shell := func(cmd string) map[string]any {
		return l.call("system", "run_command", `{"command":"`+cmd+`"}`)
	}
	decide := func(call map[string]any, v url.Values) (string, map[string]any) {
		t.Helper()
		id := l.pending(t, call)
		resp, _ := l.Member.PostForm("/approvals/"+id+"/decision", v)
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("decision: %d", resp.StatusCode)
		}
		status, out := l.claim(l.Key, id, call)
		if status != http.StatusOK {
			t.Fatalf("claim: %d %v", status, out)
		}
		return id, out
	}
	grant := func(out map[string]any) string {
		g, ok := out["grant"]
		if !ok {
			return ""
		}
		b, _ := json.Marshal(g)
		return string(b)
	}
	_, out := decide(shell("grep foo -r src"), url.Values{"decision": {"always_matching"}, "scope": {"0:options"}})
	if g := grant(out); g != `{"scope":{"shell":{"argument":"command","rules":[{"options":true,"words":["grep","foo"]}]}}}` {
		t.Fatalf("grant with options: %s", g)
	}
	_, out = decide(shell("git log -n 3"), url.Values{"decision": {"always_matching"}, "scope": {"0:prefix"}})
	if g := grant(out); g != `{"scope":{"shell":{"argument":"command","rules":[{"words":["git","log"]}]}}}` {
		t.Fatalf("grant without options: %s (answer %v)", g, out)
	}
	if out["scope"] != "always" {
		t.Fatalf("scope %v", out["scope"])
	}
	_, out = decide(shell("ls -la build"), url.Values{"decision": {"approve"}})
	if g := grant(out); g != "" {
		t.Fatalf("a one-time approval reported a grant: %s", g)
	}
	// Revoked between the decision and the claim: no grant is reported.
	call := shell("npm test")
	id := l.pending(t, call)
	resp, _ := l.Member.PostForm("/approvals/"+id+"/decision", url.Values{"decision": {"always_matching"}, "scope": {"0:prefix"}})
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("decision: %d", resp.StatusCode)
	}
	if _, err := l.DB.Pool.Exec(context.Background(), `UPDATE standing_grants SET revoked_at = now() WHERE approval_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	status, out := l.claim(l.Key, id, call)
	if status != http.StatusOK || out["scope"] != "always" {
		t.Fatalf("claim: %d %v", status, out)
	}
	if g := grant(out); g != "" {
		t.Fatalf("a revoked grant was reported: %s", g)
	}
	l.noErrorLogged(t)
}
