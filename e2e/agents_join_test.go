package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/dev"
)

// TestClaudeCodeHookAndGatewayAskOnce: the real Claude Code with the
// Countersign hook (matcher "*") and the reference filesystem MCP server
// behind `countersign mcp`. The model's mcp__filesystem__write_file passes
// both guards — the hook, then the gateway — and makes one item: the person
// approves once in Chromium, the file is written once, and the audit names
// both guards (invariant 18).
func TestClaudeCodeHookAndGatewayAskOnce(t *testing.T) {
	s := newAgentSetup(t)
	server, err := filepath.Abs("mcp/node_modules/.bin/mcp-server-filesystem")
	if err == nil {
		_, err = os.Stat(server)
	}
	if err != nil {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			t.Fatalf("this test needs `npm ci` in e2e/mcp: %v", err)
		}
		t.Skipf("e2e/mcp/node_modules missing (%v)", err)
	}
	work := t.TempDir()
	target := filepath.Join(work, "approved.txt")
	mcp := map[string]any{"mcpServers": map[string]any{"filesystem": map[string]any{
		"command": s.hook,
		"args": []string{"mcp", "--connector", "filesystem", "--url", s.e.BaseURL, "--user", dev.DemoMember.Subject,
			"--api-key-file", s.keyFile, "--", server, work},
	}}}
	input, _ := json.Marshal(map[string]string{"path": target, "content": "written once\n"})
	c := s.startClaudeIn(t, work, []string{"--mcp-config", writeJSON(t, mcp), "--strict-mcp-config"},
		toolCall{"mcp__filesystem__write_file", string(input)})

	callID := s.pendingItem(t, c.cliRun, "filesystem", "write_file")
	if want := "toolu_" + c.model.callID(0); callID != want {
		t.Fatalf("the item is for call %q, not the model's %q", callID, want)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the file was written before the person approved")
	}
	s.decide(t, callID, "approve", "")
	c.wait(t)

	if b, err := os.ReadFile(target); err != nil || string(b) != "written once\n" {
		t.Fatalf("%s: %q %v", target, b, err)
	}
	got, isErr := c.toolResult(t, 0)
	t.Logf("tool result: %s", got)
	if isErr {
		t.Fatalf("the approved write's result is an error: %s", got)
	}
	// One item, one decision: the gateway did not ask again.
	if n := s.count(t, `SELECT count(*) FROM approvals WHERE call_id = $1`, callID); n != 1 {
		t.Fatalf("%d items for the one call", n)
	}
	if n := s.count(t, `SELECT count(*) FROM audit_events WHERE action IN ('approved', 'rejected')
		AND approval_id = (SELECT id::text FROM approvals WHERE call_id = $1)`, callID); n != 1 {
		t.Fatalf("%d decisions for the one call", n)
	}
	// Both guards are in the audit: the hook asked and claimed, the
	// gateway joined and claimed once — so the call reached the MCP
	// server once.
	lines := map[string]string{
		"the hook's request":  `action = 'approval requested' AND detail->>'runtime_client' = 'Claude Code'`,
		"the gateway's join":  `action = 'joined by another guard' AND detail->>'runtime_client' LIKE 'countersign mcp → %' AND detail->>'first_guard_client' = 'Claude Code'`,
		"the gateway's claim": `action = 'claimed' AND detail->>'second_guard' = 'true' AND detail->>'runtime_client' LIKE 'countersign mcp → %'`,
		"the hook's claim":    `action = 'claimed' AND detail->>'second_guard' IS NULL`,
	}
	for what, cond := range lines {
		if n := s.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = (SELECT id::text FROM approvals WHERE call_id = $1) AND `+cond, callID); n != 1 {
			t.Errorf("%d lines for %s", n, what)
		}
	}
	if strings.Contains(c.model.received(), s.key) {
		t.Fatal("the model received the API key")
	}
}

// startClaudeIn is startClaude in the workspace work, with more arguments
// for `claude -p`.
func (s *agentSetup) startClaudeIn(t *testing.T, work string, args []string, script ...toolCall) *claudeRun {
	t.Helper()
	c := &claudeRun{home: t.TempDir(), work: work}
	c.model = newFakeModel(t, anthropicMessages, script...)
	settings := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
		"matcher": "*",
		"hooks":   []any{map[string]any{"type": "command", "command": s.hookCommand("claude-code", s.e.BaseURL), "timeout": 60}},
	}}}}
	env := []string{
		"HOME=" + c.home,
		"ANTHROPIC_BASE_URL=" + c.model.URL,
		"ANTHROPIC_API_KEY=sk-ant-fake-model-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
	c.cliRun = s.startCLI(t, c.work, env, "claude", append([]string{"-p", "Follow the plan.", "--settings", writeJSON(t, settings),
		"--output-format", "json"}, args...)...)
	return c
}

// writeJSON writes v to a new file (0600) and returns its name.
func writeJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), fmt.Sprintf("config-%d.json", len(b)))
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
