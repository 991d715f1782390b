package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/gateway"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The client sees the upstream's tools unchanged, and they are registered
// with their annotations: the read-only one is allowed, the destructive
// one needs a person.
func TestCatalog(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory())
	got, err := h.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := directTools(n)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(got.Tools)
	b, _ := json.Marshal(direct)
	if string(a) != string(b) {
		t.Fatalf("tools through the gateway differ from the upstream's:\n%s\n%s", a, b)
	}
	h.waitCount(t, 4, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	rows, err := h.e.DB.Pool.Query(context.Background(), `SELECT name, mode, read_only_hint IS TRUE, destructive_hint IS TRUE FROM tools WHERE connector = 'notes' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var modes []string
	for rows.Next() {
		var name, mode string
		var ro, de bool
		if err := rows.Scan(&name, &mode, &ro, &de); err != nil {
			t.Fatal(err)
		}
		modes = append(modes, name+":"+mode+":"+map[bool]string{true: "ro", false: "-"}[ro]+":"+map[bool]string{true: "de", false: "-"}[de])
	}
	want := "crash:allow:ro:-,pid:allow:ro:-,read_note:allow:ro:-,write_note:require_approval:-:de"
	if strings.Join(modes, ",") != want {
		t.Fatalf("catalog: %v, want %s", modes, want)
	}
}

func directTools(n *notes) ([]*mcp.Tool, error) {
	t, err := n.inMemory()()
	if err != nil {
		return nil, err
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil).Connect(context.Background(), t, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		return nil, err
	}
	return res.Tools, nil
}

// A tool the upstream adds later is registered (with the default policy
// for its annotations) and the client is told the list changed.
func TestToolListChanged(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory())
	n.lastServer().AddTool(&mcp.Tool{Name: "delete_note", InputSchema: object, Annotations: &mcp.ToolAnnotations{DestructiveHint: yes()}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	<-h.changed
	h.waitCount(t, 1, `SELECT count(*) FROM tools WHERE connector = 'notes' AND name = 'delete_note' AND mode = 'require_approval'`)
	res, err := h.cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != 5 {
		t.Fatalf("%v %v", res, err)
	}
}

// A tool the upstream did not list is answered as MCP answers an unknown
// tool (JSON-RPC -32602) before anything is sent upstream: an unlisted
// tool may still be one the server serves, and it would run unchecked.
func TestUnlistedToolNeverReachesUpstream(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory())
	_, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "format_disk", Arguments: json.RawMessage(`{}`)})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || we.Message != "Unknown tool: format_disk" {
		t.Fatalf("want -32602 Unknown tool, got %v", err)
	}
	if got := n.got("format_disk"); len(got) != 0 {
		t.Fatalf("upstream got %q", got)
	}
}

// Resources and prompts pass through unchanged, and are announced.
func TestResourcesAndPromptsPassThrough(t *testing.T) {
	h := start(t, (&notes{}).inMemory())
	caps := h.cs.InitializeResult().Capabilities
	if caps.Resources == nil || caps.Prompts == nil || caps.Tools == nil {
		t.Fatalf("capabilities %+v", caps)
	}
	ctx := context.Background()
	rs, err := h.cs.ListResources(ctx, nil)
	if err != nil || len(rs.Resources) != 1 || rs.Resources[0].URI != "notes://todo" {
		t.Fatalf("%+v %v", rs, err)
	}
	rr, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://todo"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "buy milk" {
		t.Fatalf("%+v %v", rr, err)
	}
	gp, err := h.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "summarise"})
	if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Content.(*mcp.TextContent).Text != "Summarise my notes." {
		t.Fatalf("%+v %v", gp, err)
	}
}

// --upstream: a remote server over streamable HTTP, with its credentials
// in a header only the gateway sends.
func TestStreamableHTTPUpstream(t *testing.T) {
	n := &notes{}
	srv := n.server()
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer upstream-secret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(remote.Close)
	h := start(t, gateway.StreamableHTTP(remote.URL, http.Header{"Authorization": {"Bearer upstream-secret"}}))
	r := h.call(t, "read_note", `{"name":"remote"}`, nil)
	if r.IsError || text(r) != "the note" {
		t.Fatalf("%v %q", r.Meta, text(r))
	}
	res := h.callAsync("write_note", `{"title":"remote"}`, nil)
	h.decide(t, h.pending(t, "write_note"), url.Values{"decision": {"reject"}})
	wantRefused(t, <-res, "approval_denied")
	if got := n.got("write_note"); len(got) != 0 {
		t.Fatalf("upstream got %q", got)
	}
}
