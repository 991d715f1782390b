package appserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

func TestCommandDecision(t *testing.T) {
	all := available{session: true, amendment: []string{"npm", "test"}}
	none := available{}
	scoped := available{session: true, amendment: []string{"npm", "test"}, scoped: true}
	for _, c := range []struct {
		name string
		out  client.Outcome
		err  error
		a    available
		want string
	}{
		{"approve", client.Outcome{Allowed: true, Via: "person", Scope: "once"}, nil, all, `"accept"`},
		{"conversation", client.Outcome{Allowed: true, Via: "person", Scope: "conversation"}, nil, all, `"acceptForSession"`},
		{"conversation not offered", client.Outcome{Allowed: true, Via: "person", Scope: "conversation"}, nil, none, `"accept"`},
		// "Always allow calls like this": Countersign keeps the scoped grant;
		// Codex is not given its amendment (which would reach further).
		{"always like this", client.Outcome{Allowed: true, Via: "person", Scope: "always"}, nil, scoped, `"accept"`},
		{"always", client.Outcome{Allowed: true, Via: "person", Scope: "always"}, nil, all, `"accept"`},
		{"always without amendment", client.Outcome{Allowed: true, Via: "person", Scope: "always"}, nil, none, `"accept"`},
		{"policy", client.Outcome{Allowed: true, Via: "policy"}, nil, all, `"accept"`},
		{"grant", client.Outcome{Allowed: true, Via: "conversation_grant"}, nil, all, `"accept"`},
		{"reject", client.Outcome{Code: "approval_denied", Message: "no"}, nil, all, `"decline"`},
		{"blocked", client.Outcome{Code: "blocked_by_policy"}, nil, all, `"decline"`},
		{"nobody answered", client.Outcome{Code: "approval_timeout"}, nil, all, `"cancel"`},
		{"cancelled", client.Outcome{Code: "approval_cancelled"}, nil, all, `"cancel"`},
		{"unavailable", client.Outcome{Code: "policy_unavailable"}, errors.New("down"), all, `"decline"`},
		// An allowed outcome with an error is not trusted.
		{"allowed with error", client.Outcome{Allowed: true, Via: "person", Scope: "once"}, errors.New("x"), all, `"decline"`},
		{"unknown code", client.Outcome{Code: "something_new"}, nil, all, `"decline"`},
	} {
		b, _ := json.Marshal(commandDecision(c.out, c.err, c.a))
		if string(b) != c.want {
			t.Errorf("%s: %s, want %s", c.name, b, c.want)
		}
	}
	if d := fileDecision(client.Outcome{Allowed: true, Via: "person", Scope: "conversation"}, nil); d != decisionAcceptForSession {
		t.Errorf("file change in this conversation: %v", d)
	}
	if d := fileDecision(client.Outcome{Allowed: true}, errors.New("x")); d != decisionDecline {
		t.Errorf("file change with error: %v", d)
	}
}

func TestAvailableDecisions(t *testing.T) {
	var c commandParams
	_ = json.Unmarshal([]byte(`{"proposedExecpolicyAmendment":["a"],"availableDecisions":["accept",{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["b","c"]}},"cancel"]}`), &c)
	a := availableOf(c, kindCommand)
	if a.session || strings.Join(a.amendment, " ") != "b c" {
		t.Fatalf("%+v", a)
	}
	// An amendment alone offers no standing answer: never the whole tool.
	if got := strings.Join(commandOffers(a), ","); got != "approve,reject" {
		t.Fatalf("offers %s", got)
	}
	a.scoped = true
	if got := strings.Join(commandOffers(a), ","); got != "approve,reject,always_matching" {
		t.Fatalf("offers %s", got)
	}
	_ = json.Unmarshal([]byte(`{"availableDecisions":["accept","acceptForSession","decline"]}`), &c)
	if got := strings.Join(commandOffers(availableOf(c, kindCommand)), ","); got != "approve,reject,approve_conversation" {
		t.Fatalf("offers %s", got)
	}
	if got := strings.Join(commandOffers(availableOf(commandParams{}, kindHumanCommand)), ","); got != "approve,reject" {
		t.Fatalf("a managed checkpoint offers %s", got)
	}
}

// TestScopeWithinAmendment: "Always allow calls like this" is offered
// only when Countersign's proposed prefix for the command is exactly
// Codex's amendment.
func TestScopeWithinAmendment(t *testing.T) {
	for _, c := range []struct {
		command   string
		amendment []string
		want      bool
	}{
		{"npm test", []string{"npm", "test"}, true},
		{"npm test unit", []string{"npm", "test", "unit"}, false}, // Countersign's prefix is shorter: it would cover more
		{"npm test", []string{"npm"}, false},                      // the amendment would cover more
		{"npm test", []string{"npm", "run"}, false},
		{"npm test", nil, false},
		{"npm test && git push", []string{"npm", "test"}, false}, // a chain: the grant names both
		{"/bin/bash -lc 'npm test'", []string{"npm", "test"}, false},
		{"rm build", []string{"rm", "build"}, false}, // exact only: no prefix proposed
		{"npm test > out", []string{"npm", "test"}, false},
		{"sudo npm test", []string{"sudo", "npm"}, false}, // runners are never covered
		{"npm $X", []string{"npm", "$X"}, false},
	} {
		raw, _ := json.Marshal(commandArgs{Command: c.command, Cwd: "/w"})
		if got := scopeWithinAmendment(raw, "command", c.amendment); got != c.want {
			t.Errorf("%q with %q: %v, want %v", c.command, c.amendment, got, c.want)
		}
	}
	raw, _ := json.Marshal(commandArgs{Command: "npm test"})
	if scopeWithinAmendment(raw, "", []string{"npm", "test"}) {
		t.Error("a tool without a shell argument was offered a scope")
	}
}

// pipeEnds is a proxy wired to in-memory pipes.
type pipeEnds struct {
	clientW io.WriteCloser // what the client writes
	clientR *bufioReader   // what the client reads
	serverW io.WriteCloser // what the app-server writes
	serverR *bufioReader   // what the app-server reads
	done    chan error
}

type bufioReader struct {
	mu  sync.Mutex
	buf bytes.Buffer
	ch  chan struct{}
}

func (b *bufioReader) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	select {
	case b.ch <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (b *bufioReader) Close() error { return nil }

// waitLen waits until n bytes were written and returns them.
func (b *bufioReader) waitLen(t *testing.T, n int) []byte {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		b.mu.Lock()
		if b.buf.Len() >= n {
			out := bytes.Clone(b.buf.Bytes())
			b.mu.Unlock()
			return out
		}
		b.mu.Unlock()
		select {
		case <-b.ch:
		case <-deadline:
			b.mu.Lock()
			defer b.mu.Unlock()
			t.Fatalf("got %d bytes, want %d: %q", b.buf.Len(), n, b.buf.String())
		}
	}
}

func startProxy(t *testing.T, url string) *pipeEnds {
	t.Helper()
	cr, cw := io.Pipe()
	sr, sw := io.Pipe()
	e := &pipeEnds{clientW: cw, clientR: &bufioReader{ch: make(chan struct{}, 1)}, serverW: sw,
		serverR: &bufioReader{ch: make(chan struct{}, 1)}, done: make(chan error, 1)}
	p := New(Options{Client: client.New(url, "test-key-0123456789"), User: "demo-member"})
	go func() { e.done <- p.Run(context.Background(), cr, e.clientR, e.serverR, sr) }()
	t.Cleanup(func() {
		_ = cw.Close()
		_ = sw.Close()
		<-e.done
	})
	return e
}

// Every line that is not an answered approval request passes byte for
// byte, both ways: odd spacing, escapes, hostile characters, invalid JSON,
// a request of an unknown shape, a last line without a newline.
func TestPassThroughBytes(t *testing.T) {
	e := startProxy(t, "http://127.0.0.1:1")
	toServer := "{\"id\":1,  \"method\":\"initialize\",\"params\":{\"clientInfo\":{\"name\":\"ide\",\"version\":\"1\"}}}\n" +
		"{\"method\":\"initialized\"}\r\n" +
		"not json \u202e\u200b\x01\n" +
		"{\"id\":\"x\",\"result\":{\"decision\":\"accept\",\"t\":\"\\u2028 <>&\"}}\n"
	if _, err := io.WriteString(e.clientW, toServer); err != nil {
		t.Fatal(err)
	}
	if got := e.serverR.waitLen(t, len(toServer)); string(got) != toServer {
		t.Fatalf("the app-server read %q", got)
	}
	toClient := "{\"method\":\"item/started\",\"params\":{\"item\":{\"type\":\"fileChange\",\"id\":\"i1\",\"changes\":[]}}}\n" +
		// An approval kind the proxy does not answer: the client gets it.
		"{\"id\":7,\"method\":\"item/commandExecution/requestApproval\",\"params\":{\"kind\":\"writeStdin\",\"threadId\":\"t\",\"turnId\":\"u\",\"itemId\":\"i\",\"command\":\"x\"}}\n" +
		"{\"id\":8,\"method\":\"item/permissions/requestApproval\",\"params\":{\"threadId\":\"t\"}}\n" +
		"{\"id\":9,\"method\":\"item/fileChange/requestApproval\",\"params\":{\"threadId\":\"t\",\"turnId\":\"u\",\"itemId\":\"unseen\"}}\n" +
		"\xff\xfe garbage\n" +
		"{\"method\":\"serverRequest/resolved\",\"params\":{\"threadId\":\"t\",\"requestId\":7}}"
	if _, err := io.WriteString(e.serverW, toClient); err != nil {
		t.Fatal(err)
	}
	_ = e.serverW.Close() // the last line ends with the app-server's output
	if got := e.clientR.waitLen(t, len(toClient)); string(got) != toClient {
		t.Fatalf("the client read %q", got)
	}
}

// A command approval is answered by the proxy and never reaches the
// client; Countersign failing is decline.
func TestCountersignErrorDeclines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"code":"internal_error","message":"boom"}}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	for _, url := range []string{srv.URL, "http://127.0.0.1:1"} {
		e := startProxy(t, url)
		req := "{\"id\":3,\"method\":\"item/commandExecution/requestApproval\",\"params\":{\"threadId\":\"t\",\"turnId\":\"u\",\"itemId\":\"i\",\"command\":\"rm -rf /\",\"cwd\":\"/\",\"availableDecisions\":[\"accept\",\"decline\"]}}\n"
		if _, err := io.WriteString(e.serverW, req); err != nil {
			t.Fatal(err)
		}
		want := `{"id":3,"result":{"decision":"decline"}}` + "\n"
		if got := e.serverR.waitLen(t, len(want)); string(got) != want {
			t.Fatalf("%s: answered %q", url, got)
		}
		_, _ = io.WriteString(e.serverW, "{\"method\":\"x\"}\n")
		if got := e.clientR.waitLen(t, 15); string(got) != "{\"method\":\"x\"}\n" {
			t.Fatalf("the client read %q", got)
		}
	}
}

// TestCommandRequestOffers: a request's offered decisions as the check
// carries them; the whole-tool "always" is never among them.
func TestCommandRequestOffers(t *testing.T) {
	p := &Proxy{}
	for _, c := range []struct{ command, amendment, want string }{
		{"npm test", `["npm","test"]`, "approve,reject,approve_conversation,always_matching"},
		{"npm test", `["npm"]`, "approve,reject,approve_conversation"},
		// The script inside Codex's wrapper is what is scoped.
		{"/bin/bash -lc 'npm test'", `["npm","test"]`, "approve,reject,approve_conversation,always_matching"},
		// Not the wrapper: the whole line is the command, never scoped.
		{"/bin/bash -c 'npm test'", `["npm","test"]`, "approve,reject,approve_conversation"},
		{"/bin/bash -lc 'npm test' && rm -rf /", `["npm","test"]`, "approve,reject,approve_conversation"},
	} {
		cmd, _ := json.Marshal(c.command)
		q, ok := p.commandRequest(json.RawMessage(`{"threadId":"th","turnId":"tu","itemId":"it","command":` + string(cmd) +
			`,"proposedExecpolicyAmendment":` + c.amendment + `,"availableDecisions":["accept","acceptForSession",` +
			`{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":` + c.amendment + `}},"cancel"]}`))
		if !ok {
			t.Fatalf("%s: not asked", c.command)
		}
		if got := strings.Join(q.call.OfferedDecisions, ","); got != c.want {
			t.Errorf("%s %s: offers %s, want %s", c.command, c.amendment, got, c.want)
		}
		// The card shows Codex's rule only where the scoped answer is offered.
		scoped := strings.HasSuffix(c.want, "always_matching")
		if shown := strings.Contains(q.call.Arguments, `"proposedExecpolicyAmendment":`+c.amendment); shown != scoped {
			t.Errorf("%s %s: arguments %s", c.command, c.amendment, q.call.Arguments)
		}
		if d := q.answer(client.Outcome{Allowed: true, Via: "person", Scope: "always"}, nil); d != decisionAccept {
			t.Errorf("%s: always answered %v", c.command, d)
		}
	}
}

// TestAlwaysAmendment: "Always allow calls like this" gives Codex its
// amendment only when the confirmed grant is exactly Codex's rule.
func TestAlwaysAmendment(t *testing.T) {
	amendment := []string{"npm", "test"}
	a := available{session: true, amendment: amendment, scoped: true}
	rule := func(words []string, exact, options bool) *client.Grant {
		return &client.Grant{Scope: approval.GrantScope{Shell: &approval.ShellScope{Argument: "command",
			Rules: []approval.ShellRule{{Words: words, Exact: exact, Options: options}}}}}
	}
	always := func(g *client.Grant) client.Outcome {
		return client.Outcome{Allowed: true, Via: "person", Scope: "always", Grant: g}
	}
	want := `{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["npm","test"]}}`
	if got := mustJSON(commandDecision(always(rule(amendment, false, true)), nil, a)); got != want {
		t.Fatalf("the grant Codex's rule is: %s", got)
	}
	soon := time.Now().Add(time.Hour)
	timed := rule(amendment, false, true)
	timed.ExpiresAt = &soon
	two := rule(amendment, false, true)
	two.Scope.Shell.Rules = append(two.Scope.Shell.Rules, approval.ShellRule{Words: []string{"npm", "run"}, Options: true})
	other := rule(amendment, false, true)
	other.Scope.Shell.Argument = "cmd"
	args := &client.Grant{Scope: approval.GrantScope{Args: &approval.ArgsScope{Fixed: map[string]string{"command": "x"}}}}
	for name, c := range map[string]struct {
		out client.Outcome
		a   available
	}{
		"no options":           {always(rule(amendment, false, false)), a},
		"exact":                {always(rule(amendment, true, true)), a},
		"another prefix":       {always(rule([]string{"npm", "run"}, false, true)), a},
		"a longer prefix":      {always(rule([]string{"npm", "test", "unit"}, false, true)), a},
		"a shorter prefix":     {always(rule([]string{"npm"}, false, true)), a},
		"timed":                {always(timed), a},
		"two rules":            {always(two), a},
		"another argument":     {always(other), a},
		"exact arguments":      {always(args), a},
		"no grant reported":    {always(nil), a},
		"not offered by Codex": {always(rule(amendment, false, true)), available{session: true, scoped: true}},
		"not scoped":           {always(rule(amendment, false, true)), available{session: true, amendment: amendment}},
		"once":                 {client.Outcome{Allowed: true, Via: "person", Scope: "once", Grant: rule(amendment, false, true)}, a},
		"by a grant":           {client.Outcome{Allowed: true, Via: "always_allow", Grant: rule(amendment, false, true)}, a},
	} {
		if got := commandDecision(c.out, nil, c.a); got != decisionAccept {
			t.Errorf("%s: %v, want accept", name, mustJSON(got))
		}
	}
}
