package hook_test

import (
	"testing"

	"github.com/countersign/countersign/hook"
)

// An MCP server named like an agent's own connector gets a connector of
// its own: mcp__claude-code__Read is never the built-in Read, whose policy
// allows it.
func TestMCPServerCannotBorrowABuiltin(t *testing.T) {
	s := newServer(t)
	// The built-in first, so its policy (allow) exists.
	runHook(s.config(hook.ClaudeCode, shortWait), claudeInput("toolu_ns0", "Read", readFile)).
		want(t, 0, claudeAnswer("allow", "Allowed by Countersign (policy)."))
	for dialect, in := range map[string]string{
		hook.ClaudeCode: claudeInput("toolu_ns1", "mcp__claude-code__Read", `{"command":"rm -rf /"}`),
		hook.Codex:      codexPreToolUse("call_ns2", "mcp__codex__Bash", `{"command":"rm -rf /"}`),
	} {
		t.Run(dialect, func(t *testing.T) {
			r := runHook(s.config(dialect, shortWait), in)
			if r.code != 0 || r.stdout == "" || r.stdout == claudeAnswer("allow", "Allowed by Countersign (policy).") {
				t.Fatalf("the borrowed name was allowed: %+v", r)
			}
			if n := s.count(t, `SELECT count(*) FROM approvals a JOIN connectors c ON c.name = a.connector
				WHERE a.connector = $1 AND c.kind = 'connector' AND a.status = 'pending'`, "mcp-"+dialect); n != 1 {
				t.Fatalf("%d pending items under mcp-%s, want 1", n, dialect)
			}
		})
	}
	if n := s.count(t, `SELECT count(*) FROM approvals WHERE connector IN ('claude-code', 'codex')`); n != 0 {
		t.Fatalf("%d items under the built-in connectors", n)
	}
	for server, want := range map[string]string{"claude-code": "mcp-claude-code", "codex": "mcp-codex", "github": "github", "mcp-codex": "mcp-codex"} {
		if got := hook.MCPConnector(server); got != want {
			t.Errorf("MCPConnector(%q) = %q, want %q", server, got, want)
		}
	}
}
