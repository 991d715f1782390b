package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/gateway"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

func TestAllowedReadOnlyCall(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory())
	r := h.call(t, "read_note", `{"name":"todo"}`, nil)
	if r.IsError || text(r) != "the note" || r.Meta["notes/served"] != "read_note" {
		t.Fatalf("%+v %q", r, text(r))
	}
	if got := n.got("read_note"); len(got) != 1 || got[0] != `{"name":"todo"}` {
		t.Fatalf("upstream got %q", got)
	}
}

// A destructive call waits for the person, with progress notifications,
// and runs once after approval with exactly the arguments the client sent
// and Countersign digested.
func TestApprovedCallRunsOnceWithExactArguments(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory())
	// Not in canonical order, with characters an encoder might escape.
	args := `{"title":"<b>Q3</b> & more","body":"caf\u00e9 \"x\"","a":[1,2.50,{"z":null,"y":true}]}`
	res := h.callAsync("write_note", args, "tok-1")
	p := <-h.progress
	id := h.pending(t, "write_note")
	if p.ProgressToken != "tok-1" || !strings.Contains(p.Message, h.e.BaseURL+"/approvals/"+id) {
		t.Fatalf("progress %+v", p)
	}
	if got := n.got("write_note"); len(got) != 0 {
		t.Fatalf("reached the upstream before approval: %q", got)
	}
	h.decide(t, id, url.Values{"decision": {"approve"}})
	r := <-res
	if r.IsError || text(r) != "written" {
		t.Fatalf("%+v %q", r, text(r))
	}
	got := n.got("write_note")
	if len(got) != 1 || got[0] != args {
		t.Fatalf("upstream got %q, want once %q", got, args)
	}
	if n := h.count(t, `SELECT count(*) FROM approvals WHERE id = $1 AND status = 'consumed' AND arguments_digest = $2`, id, approval.Digest(got[0])); n != 1 {
		t.Fatal("the forwarded bytes are not the digested ones")
	}
}

func TestRejectedCall(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory())
	res := h.callAsync("write_note", `{"title":"x"}`, nil)
	id := h.pending(t, "write_note")
	h.decide(t, id, url.Values{"decision": {"reject"}, "reason": {"Not on Fridays"}})
	r := <-res
	wantRefused(t, r, "approval_denied")
	if !strings.Contains(text(r), "Not on Fridays") {
		t.Fatalf("text %q", text(r))
	}
	if got := n.got("write_note"); len(got) != 0 {
		t.Fatalf("upstream got %q", got)
	}
}

// The hold runs out: the model gets the link; the same call made again
// after approval joins the same item and runs once (one claim).
func TestHoldExpiresThenRetryRunsOnce(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory(), func(o *gateway.Options) { o.Hold = 300 * time.Millisecond })
	args := `{"title":"later"}`
	r := h.call(t, "write_note", args, nil)
	wantRefused(t, r, client.CodeApprovalPending)
	id, _ := r.Meta[gateway.MetaApprovalID].(string)
	link := h.e.BaseURL + "/approvals/" + id
	if id == "" || r.Meta[gateway.MetaURL] != link || !strings.Contains(text(r), link) || !strings.Contains(text(r), "same call again") {
		t.Fatalf("%v %q", r.Meta, text(r))
	}
	if got := n.got("write_note"); len(got) != 0 {
		t.Fatalf("upstream got %q while pending", got)
	}
	h.decide(t, id, url.Values{"decision": {"approve"}})
	r = h.call(t, "write_note", args, nil)
	if r.IsError || text(r) != "written" {
		t.Fatalf("retry: %v %q", r.Meta, text(r))
	}
	if got := n.got("write_note"); len(got) != 1 || got[0] != args {
		t.Fatalf("upstream got %q", got)
	}
	if c := h.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'claimed'`, id); c != 1 {
		t.Fatalf("%d claims", c)
	}
	if c := h.count(t, `SELECT count(*) FROM approvals WHERE tool = 'write_note'`); c != 1 {
		t.Fatalf("%d items for one call made twice", c)
	}
}

func TestBlockedToolNeverReachesUpstream(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory())
	if _, err := h.e.DB.Pool.Exec(context.Background(), `UPDATE tools SET mode = 'block' WHERE connector = 'notes' AND name = 'read_note'`); err != nil {
		t.Fatal(err)
	}
	r := h.call(t, "read_note", `{"name":"todo"}`, nil)
	wantRefused(t, r, "blocked_by_policy")
	if got := n.got("read_note"); len(got) != 0 {
		t.Fatalf("upstream got %q", got)
	}
}

func TestCountersignDownNothingReachesUpstream(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory())
	h.e.Stop()
	// Stop only begins the shutdown: wait until nothing answers.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(h.e.BaseURL + "/healthz")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("the server is still answering")
		}
	}
	for _, tool := range []string{"read_note", "write_note"} {
		r := h.call(t, tool, `{"name":"todo"}`, nil)
		wantRefused(t, r, gateway.CodeCountersignUnreachable)
		if !strings.Contains(text(r), "could not be reached") {
			t.Fatalf("text %q", text(r))
		}
		if got := n.got(tool); len(got) != 0 {
			t.Fatalf("%s: upstream got %q", tool, got)
		}
	}
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

// Where the client offers URL elicitation, it is shown the item's page;
// its answer decides nothing — the call still waits for the person.
func TestURLElicitationIsOnlyALink(t *testing.T) {
	n := &notes{}
	// From protocol version 2026-07-28 on, a server may not send requests
	// while serving one (multi round-trip requests instead): the link is
	// offered this way to clients on earlier versions only.
	h := startProtocol(t, "2025-11-25", n.inMemory())
	res := h.callAsync("write_note", `{"title":"e"}`, nil)
	el := <-h.elicited
	id := h.pending(t, "write_note")
	if el.Mode != "url" || el.URL != h.e.BaseURL+"/approvals/"+id {
		t.Fatalf("elicitation %+v", el)
	}
	if s := h.count(t, `SELECT count(*) FROM approvals WHERE id = $1 AND status = 'pending'`, id); s != 1 || len(n.got("write_note")) != 0 {
		t.Fatal("the client's accept decided the call")
	}
	h.decide(t, id, url.Values{"decision": {"reject"}})
	wantRefused(t, <-res, "approval_denied")
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

// The client's own call id (Claude Code's tool-use id) binds the item; the
// client's _meta reaches the upstream as the client sent it.
func TestCallIDAndMeta(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory(), func(o *gateway.Options) { o.Hold = 100 * time.Millisecond })
	ctx := context.Background()
	r, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_note", Arguments: json.RawMessage(`{"title":"m"}`),
		Meta: mcp.Meta{"claudecode/toolUseId": "toolu_01ABC"}})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, r, client.CodeApprovalPending)
	if c := h.count(t, `SELECT count(*) FROM approvals WHERE call_id = 'toolu_01ABC'`); c != 1 {
		t.Fatalf("%d items bound to the tool-use id", c)
	}
	p := &mcp.CallToolParams{Name: "read_note", Arguments: json.RawMessage(`{}`), Meta: mcp.Meta{"vendor/trace": "t-1"}}
	p.SetProgressToken("tok")
	if r, err := h.cs.CallTool(ctx, p); err != nil || r.IsError {
		t.Fatalf("%v %v", r, err)
	}
	n.mu.Lock()
	got := n.meta[len(n.meta)-1]
	n.mu.Unlock()
	info, _ := got["io.modelcontextprotocol/clientInfo"].(map[string]any)
	if got["vendor/trace"] != "t-1" || got["progressToken"] != "tok" || (info != nil && info["name"] != "test-client") {
		t.Fatalf("upstream got _meta %v", got)
	}
}

// The person may decide the moment the item appears, before the gateway
// starts waiting: the decision still ends this call, on the same item.
func TestDecidedAtOnce(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory(), func(o *gateway.Options) { o.Hold = 5 * time.Second })
	for i, decision := range []string{"reject", "approve"} {
		args := `{"title":"at once ` + decision + `"}`
		res := h.callAsync("write_note", args, "tok")
		<-h.progress
		id := h.pending(t, "write_note")
		h.decide(t, id, url.Values{"decision": {decision}})
		r := <-res
		if decision == "reject" {
			wantRefused(t, r, "approval_denied")
		} else if r.IsError {
			t.Fatalf("approved at once: %v %q", r.Meta, text(r))
		}
		if c := h.count(t, `SELECT count(*) FROM approvals WHERE tool = 'write_note'`); c != i+1 {
			t.Fatalf("%s: %d items, want %d", decision, c, i+1)
		}
	}
	if got := n.got("write_note"); len(got) != 1 {
		t.Fatalf("upstream got %q", got)
	}
}
