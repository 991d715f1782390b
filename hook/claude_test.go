package hook_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/web"
)

const (
	readFile   = `{"file_path":"/home/maya/p/README.md"}`
	rmRF       = `{"command":"rm -rf build/ && git push --force","description":"Clean and push"}`
	issueInput = `{"repo":"acme/api","title":"Flaky test"}`
)

// waitingMessage is what the model reads when the hook stops waiting.
func waitingMessage(s *server, tool, id string) string {
	return approval.Message(approval.CodeApprovalPending, approval.MessageInput{Tool: tool, URL: s.BaseURL + "/approvals/" + id})
}

// Recorded Claude Code inputs, each answered without a person.
func TestClaudeCodeInputs(t *testing.T) {
	s := newServer(t)
	cfg := s.config(hook.ClaudeCode, shortWait)
	t.Run("ReadOnlyAllowedByPolicy", func(t *testing.T) {
		runHook(cfg, claudeInput("toolu_read", "Read", readFile)).
			want(t, 0, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"Allowed by Countersign (policy)."}}`+"\n")
		// Registered on first sight under the agent's own connector, read-only.
		if n := s.count(t, `SELECT count(*) FROM tools t JOIN connectors c ON c.name = t.connector
			WHERE c.name = 'claude-code' AND c.kind = 'builtin' AND c.display_name = 'Claude Code' AND t.name = 'Read' AND t.read_only_hint`); n != 1 {
			t.Fatalf("Read registered %d times", n)
		}
	})
	pending := map[string]struct{ tool, input, connector, name, kind string }{
		// Destructive: asks a person; the deadline passes first.
		"BashDestructive": {"Bash", rmRF, "claude-code", "Bash", "builtin"},
		// An MCP tool belongs to its server's connector.
		"MCPTool": {"mcp__github__create_issue", issueInput, "github", "create_issue", "connector"},
		// A built-in of a newer Claude Code: unknown behaviour, asks.
		"UnknownTool": {"FutureTool", `{"skill":"deploy"}`, "claude-code", "FutureTool", "builtin"},
	}
	for name, c := range pending {
		t.Run(name, func(t *testing.T) {
			callID := "toolu_" + name
			r := runHook(cfg, claudeInput(callID, c.tool, c.input))
			id := s.pendingID(t, callID)
			r.want(t, 0, claudeAnswer("deny", waitingMessage(s, c.name, id)))
			if n := s.count(t, `SELECT count(*) FROM approvals a JOIN connectors c ON c.name = a.connector
				WHERE a.id = $1 AND a.connector = $2 AND a.tool = $3 AND c.kind = $4 AND a.conversation_id = 'sess-1' AND a.turn_id = 'prompt-1'`,
				id, c.connector, c.name, c.kind); n != 1 {
				t.Fatalf("item %s is not %s · %s (%s)", id, c.connector, c.name, c.kind)
			}
			if name == "UnknownTool" {
				// No hints at all, no standing approval, and a description
				// that tells the admin where it was first seen.
				if n := s.count(t, `SELECT count(*) FROM tools WHERE connector = 'claude-code' AND name = 'FutureTool'
					AND read_only_hint IS NULL AND destructive_hint IS NULL AND idempotent_hint IS NULL AND open_world_hint IS NULL
					AND NOT standing_approval AND mode = 'require_approval' AND description LIKE '%not in its catalog of Claude Code 2.1.328%'`); n != 1 {
					t.Fatal("FutureTool is not registered as of unknown behaviour without standing approval")
				}
			}
		})
	}
	failures := map[string]struct{ input, why string }{
		"MalformedJSON":    {`{"session_id":"sess-1","tool_name":"Bash",`, "not a JSON object"},
		"MissingToolUseID": {`{"session_id":"sess-1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`, "no tool_use_id"},
		"MissingToolInput": {`{"session_id":"sess-1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"t1"}`, "no tool_input"},
		"OtherEvent":       {`{"session_id":"sess-1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":"t1"}`, `"PostToolUse"`},
		// Two tool names in one text: the agent and the hook could read different calls.
		"DuplicateName": {`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_name":"Bash","tool_input":{},"tool_use_id":"t1"}`, "not a JSON object"},
		"Empty":         {``, "not a JSON object"},
	}
	for name, c := range failures {
		t.Run(name, func(t *testing.T) { runHook(cfg, c.input).wantFailed(t, c.why) })
	}
	t.Run("BadKey", func(t *testing.T) {
		bad := cfg
		bad.Client = client.New(s.BaseURL, "cs_live_not_a_key")
		runHook(bad, claudeInput("toolu_k", "Read", readFile)).wantFailed(t, "refused the API key")
	})
	t.Run("UnknownDialect", func(t *testing.T) {
		bad := cfg
		bad.Dialect = "cursor"
		runHook(bad, claudeInput("toolu_d", "Read", readFile)).wantFailed(t, `unknown dialect "cursor"`)
	})
	t.Run("NoUser", func(t *testing.T) {
		bad := cfg
		bad.User = ""
		runHook(bad, claudeInput("toolu_u", "Read", readFile)).wantFailed(t, "--user")
	})
}

// An administrator's policy is never loosened by a hook's registration.
func TestClaudeCodeKeepsAdminPolicy(t *testing.T) {
	s := newServer(t)
	cfg := s.config(hook.ClaudeCode, shortWait)
	// The demo catalog's mail connector: search_messages is read-only
	// (allowed); an MCP call to it is allowed as it stands.
	runHook(cfg, claudeInput("toolu_m1", "mcp__mail__search_messages", `{"query":"invoices"}`)).
		want(t, 0, claudeAnswer("allow", "Allowed by Countersign (policy)."))
	// Deleted connector: registration is refused and the call does not run.
	ctx := context.Background()
	if _, err := s.DB.Pool.Exec(ctx, `UPDATE connectors SET deleted_at = now() WHERE name = 'mail'`); err != nil {
		t.Fatal(err)
	}
	runHook(cfg, claudeInput("toolu_m2", "mcp__mail__search_messages", `{"query":"invoices"}`)).wantFailed(t, "connector_deleted")
}

func TestClaudeCodeApprovedInBrowser(t *testing.T) {
	s := newServer(t)
	res := runAsync(s.config(hook.ClaudeCode, 30*time.Second), claudeInput("toolu_ok", "Bash", rmRF))
	id := s.pendingID(t, "toolu_ok")
	s.decide(t, id, url.Values{"decision": {"approve"}})
	(<-res).want(t, 0, claudeAnswer("allow", "Approved in Countersign (once)."))
	if n := s.count(t, `SELECT count(*) FROM approvals WHERE id = $1 AND status = 'consumed'`, id); n != 1 {
		t.Fatal("approval not consumed")
	}
}

// The reviewer's words reach the model, marked as theirs, character for
// character: line and paragraph separators, bidirectional marks, markup.
func TestClaudeCodeRejectedWithReason(t *testing.T) {
	s := newServer(t)
	reason := "Use the staging database \u2028instead\u2029 \u202eevil\u202c </script> \"quoted\" & more"
	res := runAsync(s.config(hook.ClaudeCode, 30*time.Second), claudeInput("toolu_no", "Bash", rmRF))
	id := s.pendingID(t, "toolu_no")
	s.decide(t, id, url.Values{"decision": {"reject"}, "reason": {reason}})
	msg := s.message(t, id)
	r := <-res
	r.want(t, 0, claudeAnswer("deny", msg))
	if !containsQuoted(msg, reason) {
		t.Fatalf("message %q does not quote the reviewer's words", msg)
	}
	var out struct {
		HookSpecificOutput struct{ PermissionDecisionReason string }
	}
	if err := jsonUnmarshal(r.stdout, &out); err != nil || out.HookSpecificOutput.PermissionDecisionReason != msg {
		t.Fatalf("reason does not decode to the message: %v", err)
	}
	if hasRaw(r.stdout, '\u2028', '\u2029') {
		t.Fatalf("raw line separators in %q", r.stdout)
	}
}

func TestClaudeCodeExpired(t *testing.T) {
	s := newServer(t, func(cfg *web.Config) { cfg.ApprovalTimeout = time.Second })
	r := runHook(s.config(hook.ClaudeCode, 30*time.Second), claudeInput("toolu_late", "Bash", rmRF))
	var id string
	if err := s.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE call_id = 'toolu_late' AND status = 'expired'`).Scan(&id); err != nil {
		t.Fatalf("no expired item: %v (%+v)", err, r)
	}
	r.want(t, 0, claudeAnswer("deny", s.message(t, id)))
}

// The deadline passes: deny with the link. The same call made again (new
// tool_use_id) joins the same item, and after approval runs once.
func TestClaudeCodeDeadlineThenRetry(t *testing.T) {
	s := newServer(t)
	cfg := s.config(hook.ClaudeCode, shortWait)
	first := runHook(cfg, claudeInput("toolu_a", "Bash", rmRF))
	id := s.pendingID(t, "toolu_a")
	first.want(t, 0, claudeAnswer("deny", waitingMessage(s, "Bash", id)))

	// Retried before anyone answered: the same item, the same link.
	reordered := `{"description":"Clean and push","command":"rm -rf build/ && git push --force"}`
	runHook(cfg, claudeInput("toolu_b", "Bash", reordered)).want(t, 0, claudeAnswer("deny", waitingMessage(s, "Bash", id)))

	s.decide(t, id, url.Values{"decision": {"approve"}})
	runHook(cfg, claudeInput("toolu_c", "Bash", rmRF)).want(t, 0, claudeAnswer("allow", "Approved in Countersign (once)."))
	if n := s.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'claimed'`, id); n != 1 {
		t.Fatalf("%d claims", n)
	}
	if n := s.count(t, `SELECT count(*) FROM approvals WHERE conversation_id = 'sess-1'`); n != 1 {
		t.Fatalf("%d items for one call", n)
	}
	// Used up: once more asks again, on a new item.
	r := runHook(cfg, claudeInput("toolu_d", "Bash", rmRF))
	next := s.pendingID(t, "toolu_d")
	if next == id {
		t.Fatal("a consumed approval was used twice")
	}
	r.want(t, 0, claudeAnswer("deny", waitingMessage(s, "Bash", next)))
}

// claude -p: the deadline answers defer, so the run stops cleanly.
func TestClaudeCodeDefer(t *testing.T) {
	s := newServer(t)
	cfg := s.config(hook.ClaudeCode, shortWait)
	cfg.Defer = true
	r := runHook(cfg, claudeInput("toolu_p", "Bash", rmRF))
	r.want(t, 0, claudeAnswer("defer", waitingMessage(s, "Bash", s.pendingID(t, "toolu_p"))))
}

func TestServerDown(t *testing.T) {
	e := testenv.NewEnv(t)
	base, key := e.BaseURL, e.APIKey()
	e.Stop()
	for dialect, in := range map[string]string{
		hook.ClaudeCode:             claudeInput("toolu_down", "Read", readFile),
		hook.Codex:                  codexPreToolUse("call_down", "Bash", `{"command":"ls"}`),
		hook.CodexPermissionRequest: codexInput("Bash", `{"command":"ls"}`),
	} {
		cfg := hook.Config{Client: client.New(base, key), User: "demo-member", Dialect: dialect, Wait: 5 * time.Second}
		runHook(cfg, in).wantFailed(t, "could not ask Countersign at "+base)
	}
}
