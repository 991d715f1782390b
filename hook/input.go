package hook

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// maxInput bounds what the hook reads from the agent: the arguments may be
// up to 1 MiB (approval.MaxArgumentsSize), escaped in JSON text.
const maxInput = 8 << 20

// Input is the part of an agent's hook input the hook uses. Both agents
// send these names; other fields are ignored.
type Input struct {
	HookEventName string         `json:"hook_event_name"`
	SessionID     string         `json:"session_id"`
	PromptID      string         `json:"prompt_id"` // Claude Code
	TurnID        string         `json:"turn_id"`   // Codex
	ToolName      string         `json:"tool_name"`
	ToolInput     jsontext.Value `json:"tool_input"`
	ToolUseID     string         `json:"tool_use_id"`
	Cwd           string         `json:"cwd"` // the agent's working directory
}

// readInput reads one JSON object. It refuses duplicate names, so the hook
// and the agent cannot read two different tool calls from one text.
func readInput(r io.Reader) (Input, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return Input{}, fmt.Errorf("could not read the hook input: %w", err)
	}
	if len(data) > maxInput {
		return Input{}, errors.New("the hook input is larger than 8 MiB")
	}
	var in Input
	if err := json.Unmarshal(data, &in); err != nil {
		return Input{}, errors.New("the hook input is not a JSON object as expected")
	}
	return in, nil
}

// arguments is tool_input as canonical JSON (RFC 8785), so that the same
// call made again has the same text whatever the agent's key order.
func (in Input) arguments() (string, error) {
	if in.ToolInput.Kind() != '{' {
		return "", errors.New("the hook input has no tool_input object")
	}
	v := in.ToolInput.Clone()
	if err := v.Canonicalize(); err != nil {
		return "", errors.New("the hook input's tool_input is not valid JSON")
	}
	return string(v), nil
}

// require names the first empty required field.
func require(fields ...[2]string) error {
	for _, f := range fields {
		if f[1] == "" {
			return fmt.Errorf("the hook input has no %s", f[0])
		}
	}
	return nil
}

// newCallID is a call id for an agent that sends none. The retry rule
// (attach_to_pending) does not depend on it.
func newCallID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
