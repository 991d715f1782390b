package hook

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/countersign/countersign/client"
)

// Dialects the hook speaks.
const (
	// ClaudeCode answers Claude Code's PreToolUse, before every tool call.
	ClaudeCode = "claude-code"
	// Codex answers Codex's PreToolUse, before every tool call in every
	// approval mode.
	Codex = "codex"
	// CodexPermissionRequest answers Codex's PermissionRequest, raised
	// only where Codex would ask the person at the terminal (sandbox
	// escalations, execpolicy prompt rules, some patches and MCP tools).
	CodexPermissionRequest = "codex-permission-request"
)

// format is how a dialect writes its answer.
type format int

const (
	claudePreToolUse format = iota
	codexPreToolUse
	codexPermissionRequest
)

// dialect is one agent's hook contract: which event it answers, how its
// input maps to a call, and how an answer is written.
type dialect struct {
	name   string
	agent  agent
	event  string // the hook_event_name it answers
	format format
	// canDefer: the agent accepts "defer" (Claude Code, in -p runs).
	canDefer bool
	// toolUseID: the agent sends an id per tool call, and the hook needs it.
	toolUseID bool
}

var dialects = map[string]dialect{
	ClaudeCode:             {name: ClaudeCode, agent: claudeCode, event: "PreToolUse", format: claudePreToolUse, canDefer: true, toolUseID: true},
	Codex:                  {name: Codex, agent: codex, event: "PreToolUse", format: codexPreToolUse, toolUseID: true},
	CodexPermissionRequest: {name: CodexPermissionRequest, agent: codex, event: "PermissionRequest", format: codexPermissionRequest},
}

func dialectFor(name string) (dialect, error) {
	if d, ok := dialects[name]; ok {
		return d, nil
	}
	return dialect{}, fmt.Errorf("unknown dialect %q (claude-code, codex or codex-permission-request)", name)
}

// call maps the agent's input to a Countersign call.
func (d dialect) call(in Input, user string) (client.Call, Target, error) {
	if in.HookEventName != d.event {
		return client.Call{}, Target{}, fmt.Errorf("the hook input is for event %q; this hook answers %s", in.HookEventName, d.event)
	}
	if err := require([2]string{"session_id", in.SessionID}, [2]string{"tool_name", in.ToolName}); err != nil {
		return client.Call{}, Target{}, err
	}
	t, err := d.agent.target(in.ToolName)
	if err != nil {
		return client.Call{}, Target{}, err
	}
	args, reason, err := in.arguments(t.said)
	if err != nil {
		return client.Call{}, Target{}, err
	}
	callID, turn := in.ToolUseID, in.PromptID
	if d.agent.connector == codex.connector {
		turn = in.TurnID
	}
	if d.toolUseID {
		if err := require([2]string{"tool_use_id", in.ToolUseID}); err != nil {
			return client.Call{}, Target{}, err
		}
	} else if callID == "" {
		callID = newCallID("codex-")
	}
	if turn == "" {
		// No turn id: the session is the turn, so cancelling a turn
		// cancels what the session still waits for.
		turn = in.SessionID
	}
	return client.Call{CallID: callID, User: user, ConversationID: in.SessionID, TurnID: turn,
		Connector: t.Connector, Tool: t.Tool, Arguments: args, Reason: reason, AttachToPending: true,
		Runtime: runtimeOf(d.agent, in)}, t, nil
}

// Decisions the hook writes.
const (
	allow    = "allow"
	deny     = "deny"
	deferred = "defer"
)

// answer is what the agent reads on stdout. encoding/json keeps every
// character of the reason: control characters, U+2028/U+2029 and <, >, &
// are escaped, bidirectional marks pass through as themselves.
func (d dialect) answer(decision, reason string) ([]byte, error) {
	if strings.TrimSpace(reason) == "" {
		// An agent may read a deny without a reason as malformed, and
		// malformed output lets Codex run the call.
		reason = "Countersign did not allow this call."
	}
	var v any
	switch d.format {
	case claudePreToolUse:
		v = map[string]any{"hookSpecificOutput": map[string]string{
			"hookEventName": d.event, "permissionDecision": decision, "permissionDecisionReason": reason}}
	case codexPreToolUse:
		if decision == allow {
			// Codex's PreToolUse reads "allow" as unsupported: a quiet
			// exit 0 is how a hook lets a call go on.
			return nil, nil
		}
		v = map[string]any{"hookSpecificOutput": map[string]string{
			"hookEventName": d.event, "permissionDecision": deny, "permissionDecisionReason": reason}}
	case codexPermissionRequest:
		dec := map[string]string{"behavior": decision}
		if decision != allow {
			dec["message"] = reason
		}
		v = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": d.event, "decision": dec}}
	}
	b, err := json.Marshal(v)
	return append(b, '\n'), err
}
