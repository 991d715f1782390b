package hook

import (
	"encoding/json"
	"fmt"

	"github.com/countersign/countersign/client"
)

// Dialects the hook speaks.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
)

// dialect is one agent's hook contract: which event it answers, how its
// input maps to a call, and how an answer is written.
type dialect struct {
	agent agent
	event string // the hook_event_name it answers
	// canDefer: the agent accepts "defer" (Claude Code, in -p runs).
	canDefer bool
}

func dialectFor(name string) (dialect, error) {
	switch name {
	case ClaudeCode:
		return dialect{agent: claudeCode, event: "PreToolUse", canDefer: true}, nil
	case Codex:
		return dialect{agent: codex, event: "PermissionRequest"}, nil
	}
	return dialect{}, fmt.Errorf("unknown dialect %q (claude-code or codex)", name)
}

// call maps the agent's input to a Countersign call.
func (d dialect) call(in Input, user string) (client.Call, Target, error) {
	if in.HookEventName != d.event {
		return client.Call{}, Target{}, fmt.Errorf("the hook input is for event %q; this hook answers %s", in.HookEventName, d.event)
	}
	if err := require([2]string{"session_id", in.SessionID}, [2]string{"tool_name", in.ToolName}); err != nil {
		return client.Call{}, Target{}, err
	}
	args, err := in.arguments()
	if err != nil {
		return client.Call{}, Target{}, err
	}
	callID, turn := in.ToolUseID, in.PromptID
	if d.agent.connector == claudeCode.connector {
		if err := require([2]string{"tool_use_id", in.ToolUseID}); err != nil {
			return client.Call{}, Target{}, err
		}
	} else {
		turn = in.TurnID
		if callID == "" {
			callID = newCallID("codex-")
		}
	}
	if turn == "" {
		// No turn id: the session is the turn, so cancelling a turn
		// cancels what the session still waits for.
		turn = in.SessionID
	}
	t := d.agent.target(in.ToolName)
	return client.Call{CallID: callID, User: user, ConversationID: in.SessionID, TurnID: turn,
		Connector: t.Connector, Tool: t.Tool, Arguments: args, AttachToPending: true,
		Runtime: runtimeOf(d.agent, in), Context: contextOf(in)}, t, nil
}

// Decisions the hook writes.
const (
	allow    = "allow"
	deny     = "deny"
	deferred = "defer"
)

// answer is the JSON the agent reads on stdout. encoding/json keeps every
// character of the reason: control characters, U+2028/U+2029 and <, >, &
// are escaped, bidirectional marks pass through as themselves.
func (d dialect) answer(decision, reason string) ([]byte, error) {
	var v any
	if d.agent.connector == claudeCode.connector {
		v = map[string]any{"hookSpecificOutput": map[string]string{
			"hookEventName": d.event, "permissionDecision": decision, "permissionDecisionReason": reason}}
	} else {
		dec := map[string]string{"behavior": decision}
		if decision != allow {
			dec["message"] = reason
		}
		v = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": d.event, "decision": dec}}
	}
	b, err := json.Marshal(v)
	return append(b, '\n'), err
}
