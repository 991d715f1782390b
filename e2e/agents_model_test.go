package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// toolCall is one tool call the fake model makes: the agent's tool name
// and its arguments as JSON.
type toolCall struct {
	Name  string
	Input string
}

// modelRequest is one request the fake model received.
type modelRequest struct {
	Method, Path string
	Header       http.Header
	Body         string
}

// fakeModel is a model API served by the test on 127.0.0.1. Each
// conversation request gets the next tool call of its script — the step is
// the number of tool results the agent has sent back so far — and, once the
// script is done, a closing text. Every request is kept, so a test can read
// what the model was shown.
type fakeModel struct {
	URL string
	// prefix makes this model's tool call ids unique in the package run:
	// Countersign keeps them as call ids.
	prefix string
	script []toolCall
	mu     sync.Mutex
	log    []modelRequest
}

var models atomic.Int64

// callID is the id of the model's step'th tool call.
func (m *fakeModel) callID(step int) string { return fmt.Sprintf("call_%s_%d", m.prefix, step) }

// newFakeModel serves api (anthropicMessages or openAIResponses) for the
// script.
func newFakeModel(t *testing.T, api func(*fakeModel, http.ResponseWriter, *http.Request, []byte), script ...toolCall) *fakeModel {
	m := &fakeModel{prefix: fmt.Sprintf("cs%d", models.Add(1)), script: script}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.log = append(m.log, modelRequest{Method: r.Method, Path: r.URL.String(), Header: r.Header.Clone(), Body: string(body)})
		m.mu.Unlock()
		api(m, w, r, body)
	}))
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m
}

// requests is what the model received so far.
func (m *fakeModel) requests() []modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelRequest(nil), m.log...)
}

// received is every request, headers and body, joined.
func (m *fakeModel) received() string {
	var b strings.Builder
	for _, r := range m.requests() {
		b.WriteString(r.Method + " " + r.Path + "\n")
		_ = r.Header.Write(&b)
		b.WriteString("\n" + r.Body + "\n")
	}
	return b.String()
}

// sse writes one server-sent event.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// closing is the model's last words, once the script is done.
const closing = "All done."

// anthropicMessages is the Anthropic Messages API as Claude Code calls it:
// POST /v1/messages (streaming), and count_tokens.
func anthropicMessages(m *fakeModel, w http.ResponseWriter, r *http.Request, body []byte) {
	switch {
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/messages/count_tokens"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"input_tokens":100}`)
		return
	case r.Method != http.MethodPost || r.URL.Path != "/v1/messages":
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model    string            `json:"model"`
		Stream   bool              `json:"stream"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	results := 0
	for _, msg := range req.Messages {
		var blocks []struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(msg.Content, &blocks) // a plain string has none
		for _, b := range blocks {
			if b.Type == "tool_result" {
				results++
			}
		}
	}
	// A request without tools is a side request of the agent's (a title,
	// a quota probe): it gets text.
	var call *toolCall
	if len(req.Tools) > 0 && results < len(m.script) {
		call = &m.script[results]
	}
	id := "toolu_" + m.callID(results)
	usage := map[string]int{"input_tokens": 100, "output_tokens": 10}
	if !req.Stream {
		content := []map[string]any{{"type": "text", "text": closing}}
		stop := "end_turn"
		if call != nil {
			content = []map[string]any{{"type": "tool_use", "id": id, "name": call.Name, "input": json.RawMessage(call.Input)}}
			stop = "tool_use"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_" + id, "type": "message", "role": "assistant",
			"model": req.Model, "content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_" + id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	stop := "end_turn"
	if call != nil {
		stop = "tool_use"
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": id, "name": call.Name, "input": map[string]any{}}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": call.Input}})
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": closing}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 10}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// openAIResponses is the OpenAI Responses API as Codex calls it through a
// custom model provider: POST {base_url}/responses, streaming.
func openAIResponses(m *fakeModel, w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Input []struct {
			Type string `json:"type"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	results := 0
	for _, item := range req.Input {
		if item.Type == "function_call_output" || item.Type == "custom_tool_call_output" {
			results++
		}
	}
	id := m.callID(results)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_" + id}})
	var item map[string]any
	if results < len(m.script) {
		call := m.script[results]
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": call.Name, "arguments": call.Input}
		if call.Name == "apply_patch" {
			// A freeform tool: its input is the patch text itself.
			item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + id, "call_id": id, "name": call.Name, "input": call.Input}
		}
	} else {
		item = map[string]any{"type": "message", "role": "assistant", "id": "msg_" + id,
			"content": []any{map[string]any{"type": "output_text", "text": closing}}}
	}
	sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_" + id,
		"usage": map[string]any{"input_tokens": 100, "input_tokens_details": nil, "output_tokens": 10,
			"output_tokens_details": nil, "total_tokens": 110}}})
}
