package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/gateway"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(gatewayEnv) == "1":
		runGateway()
		return
	case os.Getenv(upstreamEnv) == "1":
		runUpstream()
		return
	}
	testenv.Main(m)
}

// harness is Countersign, the gateway in front of an upstream, and an MCP
// client connected to the gateway.
type harness struct {
	changed  chan struct{} // the client got notifications/tools/list_changed
	elicited chan *mcp.ElicitParams
	e        *testenv.Env
	done     chan error // Serve's answer
	member   *testenv.Browser
	cs       *mcp.ClientSession
	progress chan *mcp.ProgressNotificationParams
}

func start(t testing.TB, upstream func() (mcp.Transport, error), opts ...func(*gateway.Options)) *harness {
	t.Helper()
	return startProtocol(t, "", upstream, opts...)
}

// startProtocol is start with the client asking for protocol version proto
// ("" for the SDK's latest).
func startProtocol(t testing.TB, proto string, upstream func() (mcp.Transport, error), opts ...func(*gateway.Options)) *harness {
	t.Helper()
	e := testenv.NewEnv(t)
	h := &harness{e: e, member: e.NewBrowser(), progress: make(chan *mcp.ProgressNotificationParams, 100),
		changed: make(chan struct{}, 10), elicited: make(chan *mcp.ElicitParams, 10)}
	h.member.SignIn("member")
	opt := gateway.Options{Connector: "notes", Client: client.New(e.BaseURL, e.APIKey()), User: dev.DemoMember.Subject,
		Upstream: upstream, ProgressEvery: 20 * time.Millisecond}
	for _, o := range opts {
		o(&opt)
	}
	g, err := gateway.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	h.done = make(chan error, 1)
	go func() { h.done <- g.Serve(context.Background(), st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case h.progress <- r.Params:
			default:
			}
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { h.changed <- struct{}{} },
		// The client offers URL elicitation and "accepts" whatever it is shown.
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.elicited <- r.Params
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	if h.cs, err = c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: proto}); err != nil {
		t.Fatal(err)
	}
	if opt.Client.BaseURL == e.BaseURL {
		// The gateway registers the upstream's tools once the client has
		// initialized; the tests change their policies.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			var n int
			if e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM tools WHERE connector = $1`, opt.Connector).Scan(&n) == nil && n > 0 {
				break
			}
		}
	}
	t.Cleanup(func() {
		_ = h.cs.Close()
		h.waitServe(t)
	})
	return h
}

// waitServe waits for Serve to return (once).
func (h *harness) waitServe(t testing.TB) {
	t.Helper()
	if h.done == nil {
		return
	}
	if err := <-h.done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	h.done = nil
}

func (h *harness) call(t *testing.T, tool, args string, progressToken any) *mcp.CallToolResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}
	if progressToken != nil {
		p.SetProgressToken(progressToken)
	}
	res, err := h.cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

func (h *harness) callAsync(tool, args string, progressToken any) chan *mcp.CallToolResult {
	ch := make(chan *mcp.CallToolResult, 1)
	go func() {
		p := &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}
		if progressToken != nil {
			p.SetProgressToken(progressToken)
		}
		res, err := h.cs.CallTool(context.Background(), p)
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "transport: " + err.Error()}}}
		}
		ch <- res
	}()
	return ch
}

// pending waits until the tool has a pending item and returns its id.
func (h *harness) pending(t *testing.T, tool string) string {
	t.Helper()
	var id string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := h.e.DB.Pool.QueryRow(context.Background(),
			`SELECT id::text FROM approvals WHERE tool = $1 AND status = 'pending'`, tool).Scan(&id)
		if err == nil {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became pending: %v", tool, err)
		}
	}
}

func (h *harness) decide(t *testing.T, id string, form url.Values) {
	t.Helper()
	if resp, body := h.member.PostForm("/approvals/"+id+"/decision", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("decision: %d %s", resp.StatusCode, body)
	}
}

func (h *harness) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := h.e.DB.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitCount waits until query counts want rows (the catalog is registered
// in the background).
func (h *harness) waitCount(t *testing.T, want int, query string, args ...any) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := h.count(t, query, args...)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows, want %d: %s", n, want, query)
		}
	}
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// wantRefused checks an isError result of the gateway's own with code.
func wantRefused(t *testing.T, r *mcp.CallToolResult, code string) {
	t.Helper()
	if !r.IsError || r.Meta[gateway.MetaCode] != code {
		t.Fatalf("want isError %s, got isError=%v meta=%v text=%q", code, r.IsError, r.Meta, text(r))
	}
}
