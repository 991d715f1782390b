package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/gateway"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// request waits for a request of the server's with method, answering
// nothing; other frames are skipped.
func (c *pipeClient) request(method string, d time.Duration) *jsonrpc.Request {
	c.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatalf("the gateway closed the connection before %s", method)
			}
			if r, ok := m.(*jsonrpc.Request); ok && r.Method == method {
				return r
			}
		case <-deadline:
			c.t.Fatalf("no %s within %s", method, d)
		}
	}
}

// Over streamable HTTP, what the server sends outside any call (its
// roots/list after initialized, a list_changed notification) reaches the
// client over the standalone GET stream, the client's answer reaches the
// server, and when the server's session expires (404), the gateway starts
// a new one and the call goes through.
func TestStreamableHTTPOutsideCallsAndExpiry(t *testing.T) {
	e, _ := countersign(t)
	roots := make(chan *mcp.ListRootsResult, 1)
	var first atomic.Bool
	var srv *mcp.Server
	srv = mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(_ context.Context, r *mcp.InitializedRequest) {
			if !first.CompareAndSwap(false, true) {
				return // the session started after expiry asks nothing
			}
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				res, err := r.Session.ListRoots(ctx, nil)
				if err != nil {
					t.Errorf("roots: %v", err)
					return
				}
				roots <- res
				srv.AddResource(&mcp.Resource{URI: "notes://later", Name: "later"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return &mcp.ReadResourceResult{}, nil
				})
			}()
		},
	})
	srv.AddTool(&mcp.Tool{Name: "read_note", InputSchema: object, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the note"}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "notes://todo", Name: "todo"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	dead := map[string]bool{}
	var inits, gets atomic.Int32
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		expired := dead[r.Header.Get("Mcp-Session-Id")]
		mu.Unlock()
		if expired {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			inits.Add(1)
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(remote.Close)
	c := servePipe(t, rawOptions(e, gateway.StreamableHTTP(remote.URL, nil)))
	c.line(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + initLegacy + `}`)
	c.response("0", 10*time.Second)
	c.line(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	rr := c.request("roots/list", 10*time.Second)
	id, _ := json.Marshal(rr.ID.Raw())
	c.line(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"roots":[{"uri":"file:///work","name":"work"}]}}`)
	select {
	case res := <-roots:
		if len(res.Roots) != 1 || res.Roots[0].URI != "file:///work" {
			t.Fatalf("the server got roots %+v", res.Roots)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client's roots never reached the server")
	}
	c.request("notifications/resources/list_changed", 10*time.Second)

	(&harness{e: e}).waitCount(t, 1, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	c.line(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_note","arguments":{}}}`)
	if text, _, isErr := callResult(t, c.response("1", 10*time.Second)); isErr || text != "the note" {
		t.Fatalf("before expiry: %q", text)
	}
	// The session expires on the server.
	expireAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for s := range srv.Sessions() {
			dead[s.ID()] = true
		}
	}
	expireAll()
	c.line(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_note","arguments":{}}}`)
	if text, _, isErr := callResult(t, c.response("2", 10*time.Second)); isErr || text != "the note" {
		t.Fatalf("after expiry: %q", text)
	}
	if n := inits.Load(); n != 2 {
		t.Fatalf("%d sessions started, want 2", n)
	}
	if gets.Load() < 2 {
		t.Fatalf("%d GET streams opened, want one per session", gets.Load())
	}
}

// The standalone stream, broken by the server, is opened again with
// Last-Event-ID, and what the server sent meanwhile reaches the client.
func TestStreamableHTTPStandaloneResumes(t *testing.T) {
	e, _ := countersign(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "read_note", InputSchema: object, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the note"}}}, nil
		})
	addResource := func(uri string) {
		srv.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	}
	addResource("notes://first")
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	var gets atomic.Int32
	firstEnded, resume := make(chan struct{}), make(chan struct{})
	lastIDs := make(chan string, 10)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			handler.ServeHTTP(w, r)
			return
		}
		switch gets.Add(1) {
		case 1:
			// The first stream ends after its first event.
			ctx, cancel := context.WithCancel(r.Context())
			defer close(firstEnded)
			handler.ServeHTTP(&cutAfterEvent{ResponseWriter: w, cancel: cancel}, r.WithContext(ctx))
		default:
			lastIDs <- r.Header.Get("Last-Event-ID")
			<-resume
			handler.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(remote.Close)
	c := servePipe(t, rawOptions(e, gateway.StreamableHTTP(remote.URL, nil)))
	c.initialize()
	addResource("notes://second") // list_changed on the standalone stream, which then ends
	c.request("notifications/resources/list_changed", 10*time.Second)
	select {
	case <-firstEnded:
	case <-time.After(10 * time.Second):
		t.Fatal("the first stream did not end")
	}
	addResource("notes://third") // sent while no stream is open
	var last string
	select {
	case last = <-lastIDs:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream was not opened again")
	}
	close(resume)
	if last == "" {
		t.Fatal("the stream was opened again without Last-Event-ID")
	}
	c.request("notifications/resources/list_changed", 10*time.Second)
}

// cutAfterEvent ends an SSE response once one event is written.
type cutAfterEvent struct {
	http.ResponseWriter
	cancel context.CancelFunc
	once   sync.Once
}

func (c *cutAfterEvent) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	if bytes.Contains(p, []byte("data:")) {
		c.once.Do(func() {
			c.Flush()
			c.cancel()
		})
	}
	return n, err
}

func (c *cutAfterEvent) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
