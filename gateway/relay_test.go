package gateway_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/gateway"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawClient speaks JSON-RPC frames to a gateway (or a server) directly,
// so that the tests see exactly what arrives.
type rawClient struct {
	t    *testing.T
	conn mcp.Connection
	in   chan jsonrpc.Message
}

// serveRaw starts a gateway with opt on an in-memory transport and
// connects a raw client to it.
func serveRaw(t *testing.T, opt gateway.Options) *rawClient {
	t.Helper()
	g, err := gateway.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- g.Serve(context.Background(), st) }()
	c := rawConnect(t, ct)
	t.Cleanup(func() {
		_ = c.conn.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return c
}

func rawConnect(t *testing.T, tr mcp.Transport) *rawClient {
	t.Helper()
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, conn: conn, in: make(chan jsonrpc.Message, 100)}
	go func() {
		for {
			m, err := conn.Read(context.Background())
			if err != nil {
				close(c.in)
				return
			}
			c.in <- m
		}
	}()
	return c
}

// rawID is a test's id (an int or a string) as a JSON-RPC id.
func rawID(id any) jsonrpc.ID {
	if n, ok := id.(int); ok {
		id = float64(n)
	}
	rid, _ := jsonrpc.MakeID(id)
	return rid
}

func (c *rawClient) send(id any, method, params string) {
	c.t.Helper()
	rid := rawID(id)
	if err := c.conn.Write(context.Background(), &jsonrpc.Request{ID: rid, Method: method, Params: json.RawMessage(params)}); err != nil {
		c.t.Fatal(err)
	}
}

// next is the next frame, or nil after d.
func (c *rawClient) next(d time.Duration) jsonrpc.Message {
	select {
	case m := <-c.in:
		return m
	case <-time.After(d):
		return nil
	}
}

// response waits for the answer to id, skipping notifications.
func (c *rawClient) response(id any, d time.Duration) *jsonrpc.Response {
	c.t.Helper()
	want := rawID(id)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if r, ok := c.next(time.Until(deadline)).(*jsonrpc.Response); ok && r.ID == want {
			return r
		}
	}
	c.t.Fatalf("no answer to %v within %s", id, d)
	return nil
}

const initLegacy = `{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"raw-client","version":"1"}}`

func (c *rawClient) initialize() *jsonrpc.Response {
	c.t.Helper()
	c.send(0, "initialize", initLegacy)
	r := c.response(0, 10*time.Second)
	c.send(nil, "notifications/initialized", `{}`)
	return r
}

func countersign(t *testing.T) (*testenv.Env, *testenv.Browser) {
	e := testenv.NewEnv(t)
	b := e.NewBrowser()
	b.SignIn("member")
	return e, b
}

func rawOptions(e *testenv.Env, up func() (mcp.Transport, error)) gateway.Options {
	return gateway.Options{Connector: "notes", Client: client.New(e.BaseURL, e.APIKey()), User: dev.DemoMember.Subject,
		Upstream: up, ProgressEvery: 20 * time.Millisecond}
}

// A client's cancel of a held call cancels its item (audited as cancelled
// by the runtime's key) and gets no answer; the same call made again asks
// afresh instead of running on a later approval.
func TestCancelHeldCallEndsItem(t *testing.T) {
	e, _ := countersign(t)
	n := &notes{}
	c := serveRaw(t, rawOptions(e, n.inMemory()))
	c.initialize()
	h := &harness{e: e}
	h.waitCount(t, 4, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	c.send(7, "tools/call", `{"name":"write_note","arguments":{"title":"cancel me"},"_meta":{"progressToken":"p7"}}`)
	id := h.pending(t, "write_note")
	c.send(nil, "notifications/cancelled", `{"requestId":7,"reason":"user pressed stop"}`)
	h.waitCount(t, 1, `SELECT count(*) FROM approvals WHERE id = $1 AND status = 'cancelled'`, id)
	if n := h.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'cancelled'`, id); n != 1 {
		t.Fatalf("%d cancelled audit events", n)
	}
	// No answer to the cancelled request, ever (progress may still be in
	// flight for a moment).
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if r, ok := c.next(time.Until(deadline)).(*jsonrpc.Response); ok {
			t.Fatalf("answer after cancel: %+v", r)
		}
	}
	if got := n.got("write_note"); len(got) != 0 {
		t.Fatalf("upstream got %q", got)
	}
	if n := h.count(t, `SELECT count(*) FROM approvals WHERE status = 'pending'`); n != 0 {
		t.Fatalf("%d pending items after the cancel", n)
	}
}

// An approval given while the call waited in one gateway process is found
// by the same call from the next process the client starts (CLI clients
// start one per call), and runs once; the approval is then used up.
func TestApprovalSurvivesNewGatewayProcess(t *testing.T) {
	e, member := countersign(t)
	n := &notes{}
	h := &harness{e: e, member: member}
	opt := rawOptions(e, n.inMemory())
	opt.Hold = 300 * time.Millisecond
	args := `{"title":"across processes"}`
	first := serveRaw(t, opt)
	first.initialize()
	first.send(1, "tools/call", `{"name":"write_note","arguments":`+args+`}`)
	r := first.response(1, 10*time.Second)
	if !strings.Contains(string(r.Result), client.CodeApprovalPending) {
		t.Fatalf("first: %s", r.Result)
	}
	id := h.pending(t, "write_note")
	h.decide(t, id, url.Values{"decision": {"approve"}})
	_ = first.conn.Close()

	for i, want := range []string{"written", client.CodeApprovalPending} {
		next := serveRaw(t, opt)
		next.initialize()
		next.send(1, "tools/call", `{"name":"write_note","arguments":`+args+`}`)
		r = next.response(1, 10*time.Second)
		if !strings.Contains(string(r.Result), want) {
			t.Fatalf("process %d: %s, want %s", i+2, r.Result, want)
		}
	}
	if got := n.got("write_note"); len(got) != 1 {
		t.Fatalf("upstream got %q", got)
	}
	if c := h.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'claimed'`, id); c != 1 {
		t.Fatalf("%d claims", c)
	}
}

// An upstream that cannot start: initialize is answered with an error that
// says so (never a closed pipe), and so is the next request.
func TestUpstreamThatCannotStart(t *testing.T) {
	e, _ := countersign(t)
	c := serveRaw(t, rawOptions(e, gateway.Command("/nonexistent/mcp-server", nil, nil)))
	c.send(0, "initialize", initLegacy)
	r := c.response(0, 10*time.Second)
	we, ok := r.Error.(*jsonrpc.Error)
	if !ok || we.Code != jsonrpc.CodeInternalError || !strings.Contains(we.Message, "could not start the MCP server") ||
		!strings.Contains(string(we.Data), gateway.CodeUpstreamUnavailable) {
		t.Fatalf("initialize: %+v", r.Error)
	}
	c.send(1, "tools/list", `{}`)
	if r := c.response(1, 10*time.Second); r.Error == nil {
		t.Fatalf("tools/list: %s", r.Result)
	}
}

// Arguments over the limit are refused with their own code and the limit.
func TestArgumentsTooLarge(t *testing.T) {
	e, _ := countersign(t)
	n := &notes{}
	c := serveRaw(t, rawOptions(e, n.inMemory()))
	c.initialize()
	big := strings.Repeat("x", gateway.MaxArguments)
	c.send(1, "tools/call", `{"name":"read_note","arguments":{"text":"`+big+`"}}`)
	r := c.response(1, 30*time.Second)
	var res mcp.CallToolResult
	if err := json.Unmarshal(r.Result, &res); err != nil || !res.IsError || res.Meta[gateway.MetaCode] != gateway.CodeArgumentsTooLarge ||
		!strings.Contains(text(&res), "1048576 bytes (1 MiB)") {
		t.Fatalf("%.300s", r.Result)
	}
	if got := n.got("read_note"); len(got) != 0 {
		t.Fatal("reached the upstream")
	}
}
