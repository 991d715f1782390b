package hook_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/hook"
)

func codexAnswer(behavior, message string) string {
	if behavior == "allow" {
		return `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}` + "\n"
	}
	return `{"hookSpecificOutput":{"decision":{"behavior":"` + behavior + `","message":` + jsonString(message) + `},"hookEventName":"PermissionRequest"}}` + "\n"
}

func TestCodexPermissionRequest(t *testing.T) {
	s := newServer(t)
	cfg := s.config(hook.CodexPermissionRequest, shortWait)
	t.Run("AllowedByPolicy", func(t *testing.T) {
		runHook(cfg, codexInput("mcp__mail__search_messages", `{"query":"invoices"}`)).want(t, 0, codexAnswer("allow", ""))
	})
	t.Run("DeadlineThenRetry", func(t *testing.T) {
		in := codexInput("Bash", `{"command":"rm -f /tmp/example"}`)
		r := runHook(cfg, in)
		var id string
		if err := s.DB.Pool.QueryRow(t.Context(), `SELECT id::text FROM approvals WHERE connector = 'codex' AND tool = 'Bash' AND conversation_id = 'codex-sess' AND turn_id = 'turn-7'`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		r.want(t, 0, codexAnswer("deny", waitingMessage(s, "Bash", id)))
		s.decide(t, id, url.Values{"decision": {"approve"}})
		runHook(cfg, in).want(t, 0, codexAnswer("allow", ""))
	})
	t.Run("Rejected", func(t *testing.T) {
		in := codexInput("apply_patch", `{"patch":"*** Begin Patch"}`)
		res := runAsync(s.config(hook.CodexPermissionRequest, 30*time.Second), in)
		var id string
		for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			_ = s.DB.Pool.QueryRow(t.Context(), `SELECT id::text FROM approvals WHERE tool = 'apply_patch' AND status = 'pending'`).Scan(&id)
		}
		s.decide(t, id, url.Values{"decision": {"reject"}, "reason": {"Not on main"}})
		(<-res).want(t, 0, codexAnswer("deny", s.message(t, id)))
	})
	t.Run("NoDefer", func(t *testing.T) {
		c := cfg
		c.Defer = true
		runHook(c, codexInput("Bash", `{"command":"ls"}`)).wantFailed(t, "codex-permission-request has no defer answer")
	})
	t.Run("PreToolUseEvent", func(t *testing.T) {
		runHook(cfg, claudeInput("t1", "Bash", `{"command":"ls"}`)).wantFailed(t, "this hook answers PermissionRequest")
	})
}

// codexDeny is the exact stdout of a Codex PreToolUse deny.
func codexDeny(reason string) string {
	return `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":` + jsonString(reason) + "}}\n"
}

// Codex's PreToolUse, before every tool call: an allow is a quiet exit 0,
// everything else an explicit deny (Codex runs the call on anything else).
func TestCodexPreToolUse(t *testing.T) {
	s := newServer(t)
	cfg := s.config(hook.Codex, shortWait)
	t.Run("AllowedIsQuiet", func(t *testing.T) {
		runHook(cfg, codexPreToolUse("call_r", "mcp__mail__search_messages", `{"query":"invoices"}`)).want(t, 0, "")
	})
	t.Run("OrdinaryCommandAsksThenRunsOnce", func(t *testing.T) {
		in := codexPreToolUse("call_echo", "Bash", `{"command":"echo approved > out.txt"}`)
		r := runHook(cfg, in)
		id := s.pendingID(t, "call_echo")
		r.want(t, 0, codexDeny(waitingMessage(s, "Bash", id)))
		if n := s.count(t, `SELECT count(*) FROM approvals WHERE id = $1 AND connector = 'codex' AND tool = 'Bash'
			AND conversation_id = 'codex-sess' AND turn_id = 'turn-7'`, id); n != 1 {
			t.Fatalf("item %s is not codex · Bash in codex-sess/turn-7", id)
		}
		s.decide(t, id, url.Values{"decision": {"approve"}})
		// The model makes the same call again, with a new call id.
		runHook(cfg, codexPreToolUse("call_echo2", "Bash", `{"command":"echo approved > out.txt"}`)).want(t, 0, "")
		if n := s.count(t, `SELECT count(*) FROM approvals WHERE id = $1 AND status = 'consumed'`, id); n != 1 {
			t.Fatalf("item %s was not claimed once", id)
		}
	})
	t.Run("RejectedWithWords", func(t *testing.T) {
		in := codexPreToolUse("call_patch", "apply_patch", `{"command":"*** Begin Patch\n*** Delete File: main.go\n*** End Patch"}`)
		res := runAsync(s.config(hook.Codex, 30*time.Second), in)
		id := s.pendingID(t, "call_patch")
		s.decide(t, id, url.Values{"decision": {"reject"}, "reason": {"Keep main.go"}})
		msg := s.message(t, id)
		(<-res).want(t, 0, codexDeny(msg))
		if !containsQuoted(msg, "Keep main.go") {
			t.Fatalf("the person's words are not in %q", msg)
		}
	})
	t.Run("NoToolUseID", func(t *testing.T) {
		runHook(cfg, strings.Replace(codexPreToolUse("", "Bash", `{"command":"ls"}`), `,"tool_use_id":""`, "", 1)).wantFailed(t, "no tool_use_id")
	})
	t.Run("PermissionRequestEvent", func(t *testing.T) {
		runHook(cfg, codexInput("Bash", `{"command":"ls"}`)).wantFailed(t, "this hook answers PreToolUse")
	})
	t.Run("NoDefer", func(t *testing.T) {
		c := cfg
		c.Defer = true
		runHook(c, codexPreToolUse("call_d", "Bash", `{"command":"ls"}`)).wantFailed(t, "codex has no defer answer")
	})
}

func containsQuoted(msg, reason string) bool {
	return strings.Contains(msg, `The user's words: "`+strings.TrimSpace(reason)+`"`)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func hasRaw(s string, runes ...rune) bool {
	for _, r := range runes {
		if strings.ContainsRune(s, r) {
			return true
		}
	}
	return false
}
