package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/gateway"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recorder is a hand-written upstream that lists the tools it is given,
// answers every tools/call with the tool's name, and records every frame
// it receives as it arrived.
type recorder struct {
	tools  string // the tools/list result
	mu     sync.Mutex
	frames []string
	result func(name string) string // a tools/call result; nil: the name as text
	// answer, when it returns a line, is the whole answer to a request.
	answer func(id json.RawMessage, method string) string
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.frames...)
}

// calls is every tools/call frame the upstream received.
func (r *recorder) calls() []string {
	var out []string
	for _, f := range r.got() {
		if strings.Contains(f, `"tools/call"`) {
			out = append(out, f)
		}
	}
	return out
}

func (r *recorder) upstream() func() (mcp.Transport, error) {
	return func() (mcp.Transport, error) {
		a, b := net.Pipe()
		go r.serve(a)
		return &gateway.Frames{Reader: b, Writer: b}, nil
	}
}

func (r *recorder) serve(c net.Conn) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var wmu sync.Mutex
	write := func(s string) {
		wmu.Lock()
		defer wmu.Unlock()
		_, _ = c.Write([]byte(s + "\n"))
	}
	for sc.Scan() {
		line := sc.Text()
		r.mu.Lock()
		r.frames = append(r.frames, line)
		r.mu.Unlock()
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" || m.Method == "" {
			continue
		}
		r.mu.Lock()
		answer := r.answer
		r.mu.Unlock()
		if answer != nil {
			if a := answer(m.ID, m.Method); a != "" {
				go write(a)
				continue
			}
		}
		res := `{}`
		switch m.Method {
		case "initialize":
			res = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"recorder","version":"1"}}`
		case "tools/list":
			res = r.tools
		case "tools/call":
			r.mu.Lock()
			result := r.result
			r.mu.Unlock()
			if result != nil {
				res = result(m.Params.Name)
			} else {
				b, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": "ran " + m.Params.Name}}})
				res = string(b)
			}
		}
		go write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + res + `}`)
	}
}

// pipeClient writes raw lines to a gateway on a pipe and reads its frames.
type pipeClient struct {
	t   *testing.T
	wmu sync.Mutex
	w   net.Conn
	in  chan jsonrpc.Message
}

// servePipe starts a gateway with opt whose client side is a pipe.
func servePipe(t *testing.T, opt gateway.Options) *pipeClient {
	t.Helper()
	g, err := gateway.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- g.Serve(context.Background(), &gateway.Frames{Reader: a, Writer: a}) }()
	c := &pipeClient{t: t, w: b, in: make(chan jsonrpc.Message, 100)}
	go func() {
		// Each message keeps the line it came in as its Extra.
		br := bufio.NewReaderSize(b, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				close(c.in)
				return
			}
			m, err := jsonrpc.DecodeMessage(line)
			if err != nil {
				continue
			}
			switch m := m.(type) {
			case *jsonrpc.Request:
				m.Extra = strings.TrimSuffix(string(line), "\n")
			case *jsonrpc.Response:
				m.Extra = strings.TrimSuffix(string(line), "\n")
			}
			c.in <- m
		}
	}()
	t.Cleanup(func() {
		_ = b.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return c
}

func (c *pipeClient) line(s string) {
	c.t.Helper()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write([]byte(s + "\n")); err != nil {
		c.t.Fatal(err)
	}
}

// response waits for the answer to id (a JSON value as text).
func (c *pipeClient) response(id string, d time.Duration) *jsonrpc.Response {
	c.t.Helper()
	var v any
	_ = json.Unmarshal([]byte(id), &v)
	want, _ := jsonrpc.MakeID(v)
	deadline := time.After(d)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatalf("the gateway closed the connection before answering %s", id)
			}
			if r, ok := m.(*jsonrpc.Response); ok && r.ID == want {
				return r
			}
		case <-deadline:
			c.t.Fatalf("no answer to %s within %s", id, d)
		}
	}
}

func (c *pipeClient) initialize() {
	c.t.Helper()
	c.line(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + initLegacy + `}`)
	c.response("0", 10*time.Second)
	c.line(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// callResult is the text and code of a tools/call answer.
func callResult(t *testing.T, r *jsonrpc.Response) (text, code string, isError bool) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("JSON-RPC error %v", r.Error)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatalf("result %s: %v", r.Result, err)
	}
	code, _ = res.Meta[gateway.MetaCode].(string)
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	return text, code, res.IsError
}

const okTools = `{"tools":[{"name":"ok_tool","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`

// A tools/call without an id, or with "id": null, is a notification: it
// never reaches the server (nobody was asked and nobody would be told);
// the session goes on.
func TestToolsCallWithoutIDNeverForwarded(t *testing.T) {
	e, _ := countersign(t)
	rec := &recorder{tools: okTools}
	var logs syncBuffer
	opt := rawOptions(e, rec.upstream())
	opt.Log = slog.New(slog.NewTextHandler(&logs, nil))
	c := servePipe(t, opt)
	c.initialize()
	(&harness{e: e}).waitCount(t, 1, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	c.line(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"ok_tool","arguments":{"n":1}}}`)
	c.line(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"ok_tool","arguments":{"n":2}}}`)
	c.line(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ok_tool","arguments":{"n":3}}}`)
	if text, _, isErr := callResult(t, c.response("3", 10*time.Second)); isErr || text != "ran ok_tool" {
		t.Fatalf("the call with an id: %q", text)
	}
	calls := rec.calls()
	if len(calls) != 1 || !strings.Contains(calls[0], `"n":3`) {
		t.Fatalf("the upstream got %q", calls)
	}
	if n := strings.Count(logs.String(), "dropped a tools/call without an id"); n != 2 {
		t.Fatalf("%d drops logged:\n%s", n, logs.String())
	}
}

// A deny that Countersign (or something in its place) answers with 200 and
// a message echoing the key reaches the client with the key replaced.
func TestDenyEchoingKeyIsRedacted(t *testing.T) {
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPut {
			_, _ = w.Write([]byte(`{"connector":"notes","tools":1}`))
			return
		}
		var body struct {
			CallID string `json:"call_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		msg, _ := json.Marshal("Blocked. You sent " + r.Header.Get("Authorization") + ".")
		_, _ = w.Write([]byte(`{"call_id":"` + body.CallID + `","decision":"deny","code":"blocked_by_policy","message":` + string(msg) + `}`))
	}))
	t.Cleanup(fake.Close)
	rec := &recorder{tools: okTools}
	c := servePipe(t, gateway.Options{Connector: "notes", Client: client.New(fake.URL, leakKey), User: dev.DemoMember.Subject,
		Upstream: rec.upstream()})
	c.initialize()
	c.line(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok_tool","arguments":{}}}`)
	text, code, isErr := callResult(t, c.response("1", 10*time.Second))
	if !isErr || code != "blocked_by_policy" || strings.Contains(text, leakKey) || !strings.Contains(text, "[API key]") {
		t.Fatalf("isError=%v code=%q text %q", isErr, code, text)
	}
	if calls := rec.calls(); len(calls) != 0 {
		t.Fatalf("the upstream got %q", calls)
	}
}

// One tool Countersign cannot take costs that tool only: a server listing
// ok_tool beside _private (a name MCP allows), ns/tool (outside MCP's
// naming guidance) and a title with a line break registers ok_tool and
// _private, which work; the other two are refused alone, in the log and to
// a client that calls them, and never reach the server.
func TestOneOddToolCostsOnlyItself(t *testing.T) {
	e, _ := countersign(t)
	rec := &recorder{tools: `{"tools":[` +
		`{"name":"ok_tool","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},` +
		`{"name":"_private","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},` +
		`{"name":"ns/tool","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},` +
		`{"name":"titled","title":"Read\nApproved","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`}
	var logs syncBuffer
	opt := rawOptions(e, rec.upstream())
	opt.Log = slog.New(slog.NewTextHandler(&logs, nil))
	c := servePipe(t, opt)
	c.initialize()
	h := &harness{e: e}
	h.waitCount(t, 2, `SELECT count(*) FROM tools WHERE connector = 'notes' AND retired_at IS NULL`)
	if n := h.count(t, `SELECT count(*) FROM tools WHERE connector = 'notes' AND name IN ('ok_tool', '_private')`); n != 2 {
		t.Fatalf("%d of ok_tool and _private registered", n)
	}
	for i, name := range []string{"ok_tool", "_private"} {
		id := strconv.Itoa(10 + i)
		c.line(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`)
		if text, _, isErr := callResult(t, c.response(id, 10*time.Second)); isErr || text != "ran "+name {
			t.Fatalf("%s: %q", name, text)
		}
	}
	for i, tc := range []struct{ name, why string }{{"ns/tool", "name must be"}, {"titled", "display_name holds a control character (U+000A)"}} {
		id := strconv.Itoa(20 + i)
		c.line(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tc.name + `","arguments":{}}}`)
		text, code, isErr := callResult(t, c.response(id, 10*time.Second))
		if !isErr || code != gateway.CodeToolRefused || !strings.Contains(text, strconv.Quote(tc.name)) || !strings.Contains(text, tc.why) {
			t.Fatalf("%s: isError=%v code=%q %q", tc.name, isErr, code, text)
		}
		if !strings.Contains(logs.String(), `tool=`+strconv.Quote(tc.name)) && !strings.Contains(logs.String(), "tool="+tc.name+" ") {
			t.Fatalf("%s is not named in the log:\n%s", tc.name, logs.String())
		}
	}
	if calls := rec.calls(); len(calls) != 2 {
		t.Fatalf("the upstream got %q", calls)
	}
}

// Every message names a tool by the name the client calls it by — the
// pending answer, a rejection with and without the person's words —
// never by its title.
func TestMessagesNameTheToolAsCalled(t *testing.T) {
	e, member := countersign(t)
	rec := &recorder{tools: `{"tools":[{"name":"send_note","title":"Send the note","inputSchema":{"type":"object"}}]}`}
	// One gateway that stops holding at once (the pending answer), one
	// that holds while the person decides.
	short := rawOptions(e, rec.upstream())
	short.Hold = 200 * time.Millisecond
	p := servePipe(t, short)
	p.initialize()
	h := &harness{e: e, member: member}
	h.waitCount(t, 1, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	long := rawOptions(e, rec.upstream())
	long.Hold = 30 * time.Second
	c := servePipe(t, long)
	c.initialize()
	send := func(c *pipeClient, id, args string) {
		c.line(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"send_note","arguments":` + args + `}}`)
	}
	result := func(c *pipeClient, id string) (string, string) {
		text, code, _ := callResult(t, c.response(id, 40*time.Second))
		return text, code
	}
	send(p, "1", `{"n":1}`)
	text, code := result(p, "1")
	if code != "approval_pending" || !strings.Contains(text, "call to send_note ") || strings.Contains(text, "Send the note") {
		t.Fatalf("pending: %s %q", code, text)
	}
	send(c, "2", `{"n":2}`)
	h.decide(t, pendingFor(t, h, `{"n":2}`), url.Values{"decision": {"reject"}, "reason": {"Not \"today\", Send the note later"}})
	text, code = result(c, "2")
	want := `The user rejected this call to send_note, so it did not run. The user's words: "Not "today", Send the note later".`
	if code != "approval_denied" || !strings.HasPrefix(text, want) {
		t.Fatalf("rejected: %s %q", code, text)
	}
	send(c, "3", `{"n":3}`)
	h.decide(t, pendingFor(t, h, `{"n":3}`), url.Values{"decision": {"reject"}})
	text, code = result(c, "3")
	if code != "approval_denied" || !strings.HasPrefix(text, "The user rejected this call to send_note, so it did not run. Do not") {
		t.Fatalf("rejected without words: %s %q", code, text)
	}
}

// The envelope passes as it was written, both ways: member order, unknown
// top-level members, spacing and escapes of a request reach the server
// byte for byte, and the server's answer reaches the client the same way.
func TestEnvelopeRelayedByteForByte(t *testing.T) {
	e, _ := countersign(t)
	answer := `{"result":{"resources":[],"x-kept":"<\u00e9>"} , "x-trace":"t-1","id":"r 4","jsonrpc":"2.0"}`
	rec := &recorder{tools: okTools, answer: func(id json.RawMessage, method string) string {
		if method == "resources/list" {
			return answer
		}
		return ""
	}}
	c := servePipe(t, rawOptions(e, rec.upstream()))
	c.initialize()
	sent := `{"params":{"cursor":null},  "x-client":{"a":1},"method":"resources/list","id":"r 4","jsonrpc":"2.0"}`
	c.line(sent)
	r := c.response(`"r 4"`, 10*time.Second)
	if r.Extra != answer {
		t.Fatalf("the client got\n%s\nthe server sent\n%s", r.Extra, answer)
	}
	var got string
	for _, f := range rec.got() {
		if strings.Contains(f, "resources/list") {
			got = f
		}
	}
	if got != sent {
		t.Fatalf("the server got\n%s\nthe client sent\n%s", got, sent)
	}
}

// pendingFor waits for the pending item of the call with these arguments.
func pendingFor(t *testing.T, h *harness, args string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var id string
		err := h.e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE status = 'pending' AND arguments_digest = $1`,
			approval.Digest(args)).Scan(&id)
		if err == nil {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pending item for %s: %v", args, err)
		}
	}
}
