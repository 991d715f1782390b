package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
