package gateway_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scripted answers are what a hand-written upstream sends, with fields a
// typed MCP layer would drop, default or add.
var scripted = map[string]string{
	"initialize":     `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{},"tasks":{"requests":{"tools":{"call":{}}}},"x-vendor":{"on":true}},"serverInfo":{"name":"raw-upstream","version":"9.9","x-build":"abc"},"instructions":"be nice"}`,
	"tools/list":     `{"tools":[{"name":"read_note","inputSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":[]},"annotations":{"readOnlyHint":true,"x-vendor-hint":"keep me"},"execution":{"taskSupport":"optional"},"_meta":{"v":1}}],"hasMore":false}`,
	"resources/list": `{"resources":[{"uri":"a://b","name":"b","size":0,"annotations":{"priority":0}}],"hasMore":false,"ttlMs":5}`,
	"prompts/list":   `{"prompts":[{"name":"p","arguments":[{"name":"x","required":false}]}]}`,
}

// rawUpstream answers from scripted; logging/setLevel "bogus" is refused
// with the server's own error, and after notifications/initialized it
// sends a log message and asks the client for its roots.
func rawUpstream(t *testing.T, rootsAnswer chan json.RawMessage) func() (mcp.Transport, error) {
	return func() (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		conn, err := st.Connect(context.Background())
		if err != nil {
			return nil, err
		}
		go func() {
			for {
				msg, err := conn.Read(context.Background())
				if err != nil {
					return
				}
				switch m := msg.(type) {
				case *jsonrpc.Request:
					if m.Method == "notifications/initialized" {
						id, _ := jsonrpc.MakeID(float64(0)) // the same id as the client's first request
						_ = conn.Write(context.Background(), &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{"level":"info","data":{"hello":"client"},"logger":"up"}`)})
						_ = conn.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "roots/list", Params: json.RawMessage(`{}`)})
					}
					if !m.IsCall() {
						continue
					}
					r := &jsonrpc.Response{ID: m.ID}
					switch {
					case m.Method == "logging/setLevel" && string(m.Params) == `{"level":"bogus"}`:
						r.Error = &jsonrpc.Error{Code: -32602, Message: "Invalid level: bogus", Data: json.RawMessage(`{"allowed":["debug"]}`)}
					case scripted[m.Method] != "":
						r.Result = json.RawMessage(scripted[m.Method])
					default:
						r.Result = json.RawMessage(`{}`)
					}
					_ = conn.Write(context.Background(), r)
				case *jsonrpc.Response:
					rootsAnswer <- m.Result
				}
			}
		}()
		return ct, nil
	}
}

// Everything but tools/call passes through as the upstream and the client
// wrote it: results byte for byte (unknown keys, false and empty values
// kept, nothing added), the server's error code and text, its log
// messages, and its requests of the client with their answers.
func TestRelayIsFaithful(t *testing.T) {
	e, _ := countersign(t)
	roots := make(chan json.RawMessage, 1)
	c := serveRaw(t, rawOptions(e, rawUpstream(t, roots)))
	c.send(0, "initialize", initLegacy)
	if r := c.response(0, 10*time.Second); string(r.Result) != scripted["initialize"] {
		t.Fatalf("initialize:\n%s\nwant\n%s", r.Result, scripted["initialize"])
	}
	c.send(nil, "notifications/initialized", `{}`)
	var sawLog, sawRoots bool
	for deadline := time.Now().Add(5 * time.Second); !(sawLog && sawRoots) && time.Now().Before(deadline); {
		m, ok := c.next(time.Until(deadline)).(*jsonrpc.Request)
		switch {
		case !ok:
		case m.Method == "notifications/message" && string(m.Params) == `{"level":"info","data":{"hello":"client"},"logger":"up"}`:
			sawLog = true
		case m.Method == "roots/list" && m.ID == rawID(0):
			sawRoots = true
			_ = c.conn.Write(context.Background(), &jsonrpc.Response{ID: m.ID, Result: json.RawMessage(`{"roots":[{"uri":"file:///p","name":"p"}]}`)})
		}
	}
	if !sawLog || !sawRoots {
		t.Fatalf("log message relayed: %v, roots request relayed: %v", sawLog, sawRoots)
	}
	if got := <-roots; string(got) != `{"roots":[{"uri":"file:///p","name":"p"}]}` {
		t.Fatalf("the upstream got roots %s", got)
	}
	for i, method := range []string{"tools/list", "resources/list", "prompts/list"} {
		c.send(i+1, method, `{}`)
		if r := c.response(i+1, 10*time.Second); string(r.Result) != scripted[method] {
			t.Errorf("%s:\n%s\nwant\n%s", method, r.Result, scripted[method])
		}
	}
	c.send(9, "logging/setLevel", `{"level":"bogus"}`)
	r := c.response(9, 10*time.Second)
	we, ok := r.Error.(*jsonrpc.Error)
	if !ok || we.Code != -32602 || we.Message != "Invalid level: bogus" || string(we.Data) != `{"allowed":["debug"]}` {
		t.Fatalf("setLevel: %+v", r.Error)
	}
}
