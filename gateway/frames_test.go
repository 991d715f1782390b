package gateway_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/gateway"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// bigResult is a tools/call result whose text is n bytes.
func bigResult(n int) string {
	return `{"content":[{"type":"text","text":"` + strings.Repeat("x", n) + `"}]}`
}

// A 20 MB answer passes through the gateway as the server sent it, byte
// for byte (the SDK's transport stopped at 16 MiB and restarted the
// server).
func TestLargeAnswerRelayedWhole(t *testing.T) {
	e, _ := countersign(t)
	want := bigResult(20_000_000)
	rec := &recorder{tools: okTools, result: func(string) string { return want }}
	c := servePipe(t, rawOptions(e, rec.upstream()))
	c.initialize()
	(&harness{e: e}).waitCount(t, 1, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	c.line(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok_tool","arguments":{}}}`)
	r := c.response("1", 60*time.Second)
	if r.Error != nil || !bytes.Equal(r.Result, []byte(want)) {
		t.Fatalf("error %v, %d bytes, want %d", r.Error, len(r.Result), len(want))
	}
}

// A client frame over the limit gets an error for that request alone —
// found by its id wherever the id is in the frame — is never held whole,
// never reaches the server, and the next request works.
func TestOverLimitClientFrame(t *testing.T) {
	e, _ := countersign(t)
	rec := &recorder{tools: okTools}
	opt := rawOptions(e, rec.upstream())
	opt.MaxFrame = 1 << 20
	c := servePipe(t, opt)
	c.initialize()
	(&harness{e: e}).waitCount(t, 1, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	big := strings.Repeat("y", 2<<20)
	c.line(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ok_tool","arguments":{"text":"` + big + `"}}}`)
	wantTooLarge(t, c.response("5", 10*time.Second), jsonrpc.CodeInvalidRequest)
	// The id after the params, and an escaped quote in a string before it.
	c.line(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"ok_tool","arguments":{"text":"\"}` + big + `"}},"id":"six"}`)
	wantTooLarge(t, c.response(`"six"`, 10*time.Second), jsonrpc.CodeInvalidRequest)
	c.line(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ok_tool","arguments":{}}}`)
	if text, _, isErr := callResult(t, c.response("7", 10*time.Second)); isErr || text != "ran ok_tool" {
		t.Fatalf("the next call: %q", text)
	}
	if calls := rec.calls(); len(calls) != 1 {
		t.Fatalf("the upstream got %d calls", len(calls))
	}
}

// The same at the default limit, with a real 300 MB frame.
func TestOverDefaultLimitClientFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 300 MB frame")
	}
	e, _ := countersign(t)
	rec := &recorder{tools: okTools}
	c := servePipe(t, rawOptions(e, rec.upstream()))
	c.initialize()
	(&harness{e: e}).waitCount(t, 1, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	chunk := bytes.Repeat([]byte("z"), 1<<20)
	c.wmu.Lock()
	_, err := c.w.Write([]byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ok_tool","arguments":{"text":"`))
	for i := 0; i < 300 && err == nil; i++ {
		_, err = c.w.Write(chunk)
	}
	if err == nil {
		_, err = c.w.Write([]byte("\"}}}\n"))
	}
	c.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	wantTooLarge(t, c.response("8", 60*time.Second), jsonrpc.CodeInvalidRequest)
	c.line(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ok_tool","arguments":{}}}`)
	if text, _, isErr := callResult(t, c.response("9", 10*time.Second)); isErr || text != "ran ok_tool" {
		t.Fatalf("the next call: %q", text)
	}
}

func wantTooLarge(t *testing.T, r *jsonrpc.Response, code int64) {
	t.Helper()
	we, ok := r.Error.(*jsonrpc.Error)
	var data map[string]string
	if ok {
		_ = json.Unmarshal(we.Data, &data)
	}
	if !ok || we.Code != code || data[gateway.MetaCode] != gateway.CodeFrameTooLarge || !strings.Contains(we.Message, "more than the 1.0 MiB") && !strings.Contains(we.Message, "more than the 256.0 MiB") {
		t.Fatalf("want error %d %s, got %+v", code, gateway.CodeFrameTooLarge, r.Error)
	}
}

// An upstream answer over the limit is that call's error: the call ran, the
// server is not restarted, and the next call works.
func TestOverLimitAnswerIsTheCallsError(t *testing.T) {
	e, _ := countersign(t)
	rec := &recorder{tools: okTools, result: func(string) string { return bigResult(2 << 20) }}
	opt := rawOptions(e, rec.upstream())
	opt.MaxFrame = 1 << 20
	c := servePipe(t, opt)
	c.initialize()
	(&harness{e: e}).waitCount(t, 1, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	c.line(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok_tool","arguments":{}}}`)
	text, code, isErr := callResult(t, c.response("1", 10*time.Second))
	if !isErr || code != gateway.CodeResultTooLarge || !strings.Contains(text, "The tool ran") {
		t.Fatalf("isError=%v code=%q %q", isErr, code, text)
	}
	rec.mu.Lock()
	rec.result = nil
	rec.mu.Unlock()
	c.line(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ok_tool","arguments":{}}}`)
	if text, _, isErr := callResult(t, c.response("2", 10*time.Second)); isErr || text != "ran ok_tool" {
		t.Fatalf("the next call: %q", text)
	}
	inits := 0
	for _, f := range rec.got() {
		if strings.Contains(f, `"method":"initialize"`) {
			inits++
		}
	}
	if inits != 1 {
		t.Fatalf("the server was initialized %d times", inits)
	}
}
