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

func TestCodex(t *testing.T) {
	s := newServer(t)
	cfg := s.config(hook.Codex, shortWait)
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
		res := runAsync(s.config(hook.Codex, 30*time.Second), in)
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
		runHook(c, codexInput("Bash", `{"command":"ls"}`)).wantFailed(t, "codex has no defer answer")
	})
	t.Run("PreToolUseEvent", func(t *testing.T) {
		runHook(cfg, claudeInput("t1", "Bash", `{"command":"ls"}`)).wantFailed(t, "this hook answers PermissionRequest")
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
