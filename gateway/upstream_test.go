package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// notes is a small upstream MCP server that records what reached it.
type notes struct {
	mu    sync.Mutex
	calls map[string][]string // tool → the raw argument bytes of each call
	last  *mcp.Server         // the server most recently started
	meta  []mcp.Meta          // the _meta of each call
}

func (n *notes) lastServer() *mcp.Server {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last
}

func (n *notes) got(tool string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.calls[tool]...)
}

var object = json.RawMessage(`{"type":"object"}`)

func yes() *bool { b := true; return &b }

// server builds the upstream: read_note (read-only), write_note
// (destructive), pid (read-only: the process id) and crash (exits).
func (n *notes) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	record := func(tool, text string) mcp.ToolHandler {
		return func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n.mu.Lock()
			if n.calls == nil {
				n.calls = map[string][]string{}
			}
			n.calls[tool] = append(n.calls[tool], string(r.Params.Arguments))
			n.meta = append(n.meta, r.Params.Meta)
			n.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}},
				Meta: mcp.Meta{"notes/served": tool}}, nil
		}
	}
	s.AddTool(&mcp.Tool{Name: "read_note", Title: "Read a note", Description: "Reads a note.", InputSchema: object,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, Meta: mcp.Meta{"notes/kind": "reader"}}, record("read_note", "the note"))
	s.AddTool(&mcp.Tool{Name: "write_note", Description: "Writes a note.", InputSchema: object,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: yes()}}, record("write_note", "written"))
	s.AddTool(&mcp.Tool{Name: "pid", InputSchema: object, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", InputSchema: object, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	s.AddResource(&mcp.Resource{URI: "notes://todo", Name: "todo", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "buy milk"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "summarise"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarise my notes."}}}}, nil
	})
	return s
}

// inMemory is an Options.Upstream serving n in this process.
func (n *notes) inMemory() func() (mcp.Transport, error) {
	return func() (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		s := n.server()
		if _, err := s.Connect(context.Background(), st, nil); err != nil {
			return nil, err
		}
		n.mu.Lock()
		n.last = s
		n.mu.Unlock()
		return ct, nil
	}
}

// upstreamEnv makes the test binary run as the notes server on stdio (the
// child process of the command tests).
const upstreamEnv = "GATEWAY_TEST_UPSTREAM"

func runUpstream() {
	n := &notes{}
	_ = n.server().Run(context.Background(), &mcp.StdioTransport{})
}
