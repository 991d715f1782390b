package hook

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/countersign/countersign/approval"

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

// arguments is tool_input as the call's argument text, and the model's
// own words about the call. Members named in said (such as Bash's
// description) never run: a string one within the reason's limits is taken
// out of the arguments and becomes the reason ("The agent says"), so that
// rewording it neither changes the digest nor opens a new item. The text is
// approval.Canonical: key order does not matter, and numbers are passed on
// exactly as the agent wrote them — never through a double.
func (in Input) arguments(said []string) (args, reason string, err error) {
	if in.ToolInput.Kind() != '{' {
		return "", "", errors.New("the hook input has no tool_input object")
	}
	obj := in.ToolInput
	if len(said) > 0 {
		if obj, reason, err = withoutSaid(in.ToolInput, said); err != nil {
			return "", "", errors.New("the hook input's tool_input is not valid JSON")
		}
	}
	c, err := approval.Canonical(obj)
	if err != nil {
		return "", "", errors.New("the hook input's tool_input is not valid JSON")
	}
	return string(c), reason, nil
}

// withoutSaid is obj without its said members, and their text joined.
func withoutSaid(obj jsontext.Value, said []string) (jsontext.Value, string, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.ReadToken(); err != nil {
		return nil, "", err
	}
	out := []byte{'{'}
	var words []string
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, "", err
		}
		key := name.String()
		val, err := dec.ReadValue()
		if err != nil {
			return nil, "", err
		}
		if slices.Contains(said, key) && val.Kind() == '"' {
			var s string
			if json.Unmarshal(val, &s) == nil && approval.CheckFields(approval.Field{Name: key, Value: s, Rule: approval.RuleReason}) == nil {
				if strings.TrimSpace(s) != "" {
					words = append(words, s)
				}
				continue
			}
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		q, err := jsontext.AppendQuote(out, key)
		if err != nil {
			return nil, "", err
		}
		out = append(append(q, ':'), val...)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, "", err
	}
	reason := strings.Join(words, "\n")
	if approval.CheckFields(approval.Field{Name: "reason", Value: reason, Rule: approval.RuleReason}) != nil {
		return obj, "", nil // too long together: keep them all as arguments
	}
	return append(out, '}'), reason, nil
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
