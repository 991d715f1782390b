package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// scriptedModel is an OpenAI-compatible model API served by the test for
// the agent frameworks: the Responses API (POST /v1/responses, as the
// OpenAI Agents SDK, the AI SDK's openai provider and LangChain's ChatOpenAI
// with useResponsesApi call it, without streaming). Each model name has its
// script: the request's step is the number of tool results in its input,
// and it gets that step's tool call, or a closing text once the script is
// done. Every request is kept, by model name.
type scriptedModel struct {
	URL     string
	mu      sync.Mutex
	scripts map[string][]toolCall
	log     map[string][]string
}

func newScriptedModel(t *testing.T) *scriptedModel {
	m := &scriptedModel{scripts: map[string][]toolCall{}, log: map[string][]string{}}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m
}

// script sets the tool calls the model named name makes.
func (m *scriptedModel) script(name string, calls ...toolCall) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scripts[name] = calls
}

// callID is the id of the step'th tool call of the model named name.
func (m *scriptedModel) callID(name string, step int) string {
	return fmt.Sprintf("call_%s_%d", name, step)
}

// requests is the bodies the model named name received, in order.
func (m *scriptedModel) requests(name string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.log[name]...)
}

// toolOutputs is every tool result the model named name was sent, in its
// last request: call id → output text.
func (m *scriptedModel) toolOutputs(t *testing.T, name string) map[string]string {
	t.Helper()
	reqs := m.requests(name)
	if len(reqs) == 0 {
		t.Fatalf("the model %s received nothing", name)
	}
	var req struct {
		Input []struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	if err := json.Unmarshal([]byte(reqs[len(reqs)-1]), &req); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, in := range req.Input {
		if in.Type != "function_call_output" {
			continue
		}
		var s string
		if json.Unmarshal(in.Output, &s) != nil {
			// Content parts: [{"type":"input_text","text":…}].
			var parts []struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(in.Output, &parts)
			for _, p := range parts {
				s += p.Text
			}
		}
		out[in.CallID] = s
	}
	return out
}

func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model string `json:"model"`
		Input []struct {
			Type string `json:"type"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.log[req.Model] = append(m.log[req.Model], string(body))
	script := m.scripts[req.Model]
	m.mu.Unlock()
	step := 0
	for _, item := range req.Input {
		if item.Type == "function_call_output" {
			step++
		}
	}
	id := m.callID(req.Model, step)
	var item map[string]any
	if step < len(script) {
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id,
			"name": script[step].Name, "arguments": script[step].Input, "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": "msg_" + id, "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": closing, "annotations": []any{}}}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "resp_" + id, "object": "response", "created_at": 1764806400, "status": "completed",
		"model": req.Model, "output": []any{item}, "error": nil, "incomplete_details": nil,
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 110},
	})
}
