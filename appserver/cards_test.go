package appserver

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// A network prompt is a network card (host, protocol, the command asking),
// not a shell command; the decisions follow what the app-server offers.
func TestNetworkRequest(t *testing.T) {
	p := New(Options{})
	q, ok := p.commandRequest(json.RawMessage(`{"threadId":"t","turnId":"u","itemId":"i","command":"curl https://example.org",
		"cwd":"/w","networkApprovalContext":{"host":"example.org","protocol":"https"},
		"availableDecisions":["accept","acceptForSession",{"applyNetworkPolicyAmendment":{"network_policy_amendment":{"host":"example.org","action":"allow"}}},"cancel"]}`))
	if !ok {
		t.Fatal("not answered")
	}
	if q.call.Tool != "network_access" || q.call.Connector != "codex" {
		t.Fatalf("asked about %s · %s", q.call.Connector, q.call.Tool)
	}
	if want := `{"host":"example.org","protocol":"https","command":"curl https://example.org","cwd":"/w"}`; q.call.Arguments != want {
		t.Fatalf("arguments %s", q.call.Arguments)
	}
	if got := strings.Join(q.call.OfferedDecisions, ","); got != "approve,reject,approve_conversation,always" {
		t.Fatalf("offers %s", got)
	}
	for _, c := range []struct {
		out  client.Outcome
		err  error
		want string
	}{
		{client.Outcome{Allowed: true, Via: "person", Scope: "once"}, nil, `"accept"`},
		{client.Outcome{Allowed: true, Via: "person", Scope: "conversation"}, nil, `"acceptForSession"`},
		{client.Outcome{Allowed: true, Via: "person", Scope: "always"}, nil,
			`{"applyNetworkPolicyAmendment":{"network_policy_amendment":{"host":"example.org","action":"allow"}}}`},
		{client.Outcome{Code: "approval_denied"}, nil, `"decline"`},
		{client.Outcome{Allowed: true}, errors.New("x"), `"decline"`},
	} {
		if b, _ := json.Marshal(q.answer(c.out, c.err)); string(b) != c.want {
			t.Errorf("%+v: %s, want %s", c.out, b, c.want)
		}
	}
	// Without a host rule offered, "always" is not offered and is accept.
	q, _ = p.commandRequest(json.RawMessage(`{"threadId":"t","turnId":"u","itemId":"i","networkApprovalContext":{"host":"h","protocol":"socks5Tcp"},"availableDecisions":["accept","cancel"]}`))
	if got := strings.Join(q.call.OfferedDecisions, ","); got != "approve,reject" {
		t.Fatalf("offers %s", got)
	}
	if _, ok := p.commandRequest(json.RawMessage(`{"threadId":"t","turnId":"u","itemId":"i","networkApprovalContext":{"protocol":"https"}}`)); ok {
		t.Fatal("a network prompt without a host was answered")
	}
}

// A permissions request lists each requested permission; approved, the
// answer grants exactly those; otherwise nothing.
func TestPermissionsRequest(t *testing.T) {
	p := New(Options{})
	req := `{"threadId":"t","turnId":"u","itemId":"i","cwd":"/w","reason":"needs the net",
		"permissions":{"network":{"enabled":true},"fileSystem":{"write":["/w/out"]}}}`
	q, ok := p.permissionsRequest(json.RawMessage(req))
	if !ok {
		t.Fatal("not answered")
	}
	if want := `{"network":{"enabled":true},"fileSystem":{"write":["/w/out"]},"cwd":"/w"}`; q.call.Arguments != want || q.call.Reason != "needs the net" {
		t.Fatalf("arguments %s reason %q", q.call.Arguments, q.call.Reason)
	}
	for _, c := range []struct {
		out  client.Outcome
		err  error
		want string
	}{
		{client.Outcome{Allowed: true, Via: "person", Scope: "once"}, nil, `{"permissions":{"fileSystem":{"write":["/w/out"]},"network":{"enabled":true}},"scope":"turn"}`},
		{client.Outcome{Allowed: true, Via: "person", Scope: "conversation"}, nil, `{"permissions":{"fileSystem":{"write":["/w/out"]},"network":{"enabled":true}},"scope":"session"}`},
		{client.Outcome{Code: "approval_denied"}, nil, `{"permissions":{},"scope":"turn"}`},
		{client.Outcome{Code: "approval_timeout"}, nil, `{"permissions":{},"scope":"turn"}`},
		{client.Outcome{Allowed: true, Via: "person"}, errors.New("x"), `{"permissions":{},"scope":"turn"}`},
	} {
		if b, _ := json.Marshal(q.result(c.out, c.err)); string(b) != c.want {
			t.Errorf("%+v: %s, want %s", c.out, b, c.want)
		}
	}
	// A permission kind the proxy cannot show goes to the client.
	if _, ok := p.permissionsRequest(json.RawMessage(`{"threadId":"t","turnId":"u","itemId":"i","permissions":{"macos":{}}}`)); ok {
		t.Fatal("an unknown permission kind was answered")
	}
}

// The check a command approval sends: Codex's shell tool with the command
// line, cwd and commandActions, the client named, the decisions offered.
func TestCommandCheck(t *testing.T) {
	var mu sync.Mutex
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		_ = json.Unmarshal(b, &got)
		id := mustJSON(got["call_id"])
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"call_id":`+id+`,"decision":"allow","via":"policy"}`)
	}))
	defer srv.Close()
	e := startProxy(t, srv.URL)
	_, _ = io.WriteString(e.clientW, `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"ide","title":"My IDE","version":"2.0"}}}`+"\n")
	e.serverR.waitLen(t, 10)
	_, _ = io.WriteString(e.serverW, `{"id":"r1","method":"item/commandExecution/requestApproval","params":{"threadId":"th","turnId":"tu","itemId":"it",`+
		`"command":"/bin/bash -lc 'rm -rf build'","cwd":"/w","commandActions":[{"type":"unknown","command":"rm -rf build"}],"reason":"clean up",`+
		`"proposedExecpolicyAmendment":["rm"],"availableDecisions":["accept",{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["rm"]}},"cancel"]}}`+"\n")
	want := `{"id":"r1","result":{"decision":"accept"}}` + "\n"
	out := e.serverR.waitLen(t, 1)
	for !strings.Contains(string(out), want) {
		out = e.serverR.waitLen(t, len(out)+1)
	}
	mu.Lock()
	defer mu.Unlock()
	if got["connector"] != "codex" || got["tool"] != "Bash" || got["conversation_id"] != "th" || got["turn_id"] != "tu" {
		t.Fatalf("check %v", got)
	}
	if a := got["arguments"]; a != `{"command":"rm -rf build","shell":"/bin/bash -lc","cwd":"/w","commandActions":[{"type":"unknown","command":"rm -rf build"}]}` {
		t.Fatalf("arguments %v", a)
	}
	if r, _ := got["reason"].(string); r != "clean up" {
		t.Fatalf("reason %q", r)
	}
	if rt := got["runtime"].(map[string]any); rt["client"] != "My IDE 2.0 through Codex app-server" || rt["working_directory"] != "/w" {
		t.Fatalf("runtime %v", rt)
	}
	// The script is the command (the wrapper is how it runs); Countersign
	// proposes only the exact "rm -rf build", which is not Codex's amendment
	// (["rm"]): no standing answer, never the whole tool.
	if o := mustJSON(got["offered_decisions"]); o != `["approve","reject"]` {
		t.Fatalf("offered %s", o)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestPersonsWords(t *testing.T) {
	plain := approval.Message(approval.CodeApprovalDenied, approval.MessageInput{Tool: "Bash"})
	worded := approval.Message(approval.CodeApprovalDenied, approval.MessageInput{Tool: "Bash", UserReason: "not today"})
	if w := personsWords(client.Outcome{Code: "approval_denied", Message: plain}, "Bash"); w != "" {
		t.Fatalf("a rejection without words steered %q", w)
	}
	if w := personsWords(client.Outcome{Code: "approval_denied", Message: worded}, "Bash"); w != worded {
		t.Fatalf("words %q", w)
	}
	if w := personsWords(client.Outcome{Code: "approval_timeout", Message: "x"}, "Bash"); w != "" {
		t.Fatalf("a timeout steered %q", w)
	}
}
