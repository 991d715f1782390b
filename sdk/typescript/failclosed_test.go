package typescript

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
)

// TestClientFailsClosed runs the package's Countersign client (dist/client.js)
// against servers that answer wrongly — an error status, a body that is not
// JSON or not the answer asked for, a redirect (to a server that would allow
// the call), no server at all — and requires every check, wait and claim to
// end in "does not run" with policy_unavailable. Each case's server would
// let the call run were its answer taken.
func TestClientFailsClosed(t *testing.T) {
	node := needNode(t)
	const approvalID = "6f1c1a52-0c4e-4b8e-9a3e-5b1f7f0a9c11"
	// allow answers as a Countersign that lets everything run.
	allow := func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			CallID string `json:"call_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/claim"):
			_, _ = io.WriteString(w, `{"id":"`+approvalID+`","call_id":"`+body.CallID+`","status":"consumed","arguments_digest":"`+approval.Digest("{}")+`"}`)
		case strings.Contains(r.URL.Path, "/approvals/"):
			_, _ = io.WriteString(w, `{"id":"`+approvalID+`","call_id":"call-1","status":"approved","scope":"once"}`)
		default:
			_, _ = io.WriteString(w, `{"call_id":"`+body.CallID+`","decision":"allow","via":"policy"}`)
		}
	}
	elsewhere := httptest.NewServer(http.HandlerFunc(allow))
	defer elsewhere.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	answers := map[string]http.HandlerFunc{
		"status500": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"call_id":"call-1","decision":"allow","via":"policy","id":"`+approvalID+`","status":"consumed"}`)
		},
		"notJSON": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"call_id":"call-1","decision":"allow",`)
		},
		"empty": func(w http.ResponseWriter, r *http.Request) {},
		"otherAnswer": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"ok":true,"status":"approved"}`)
		},
		"otherCall": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"call_id":"call-2","decision":"allow","via":"policy","id":"`+approvalID+`","status":"approved"}`)
		},
		"redirectElsewhere": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
		},
		"redirectHere": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/allow"+strings.TrimPrefix(r.URL.Path, "/redirectHere"), http.StatusPermanentRedirect)
		},
	}
	mux := http.NewServeMux()
	for name, h := range answers {
		mux.Handle("/"+name+"/", h)
	}
	mux.Handle("/allow/", http.HandlerFunc(allow))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	bases := map[string]string{"noServer": gone.URL}
	for name := range answers {
		bases[name] = srv.URL + "/" + name
	}
	bases["control"] = srv.URL + "/allow" // the same answers, taken: the harness works
	script := `
import { Countersign } from "./dist/client.js";
const bases = JSON.parse(process.env.BASES);
const out = {};
for (const [name, baseUrl] of Object.entries(bases)) {
  const cs = new Countersign({ baseUrl, apiKey: "test-key", pollSeconds: 1 });
  const check = await cs.check({ callId: "call-1", user: "u", conversationId: "c", turnId: "t", connector: "k", tool: "x", arguments: "{}" });
  const wait = await cs.waitForDecision("` + approvalID + `", "call-1", { maxWaitMs: 2000 });
  const claim = await cs.claim("` + approvalID + `", "call-1", "{}");
  out[name] = { check: check.kind + " " + (check.code ?? ""), wait: wait.kind + " " + (wait.code ?? ""), claim: claim.ok ? "ok" : "refused " + claim.code };
}
process.stdout.write(JSON.stringify(out));
`
	in, _ := json.Marshal(bases)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e", script)
	cmd.Env = append(cmd.Environ(), "BASES="+string(in))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got map[string]struct{ Check, Wait, Claim string }
	if err := json.Unmarshal(outb, &got); err != nil {
		t.Fatalf("%s: %v", outb, err)
	}
	if c := got["control"]; c.Check != "allow " || c.Wait != "approved " || c.Claim != "ok" {
		t.Fatalf("the allowing server's answers were not taken (%+v): the cases below prove nothing", c)
	}
	for name := range bases {
		if name == "control" {
			continue
		}
		g := got[name]
		if g.Check != "deny policy_unavailable" || g.Wait != "refused policy_unavailable" || g.Claim != "refused policy_unavailable" {
			t.Errorf("%s: check %q, wait %q, claim %q; want each to refuse with policy_unavailable", name, g.Check, g.Wait, g.Claim)
		}
	}
}

// TestAdaptersRefuseArgumentsJSONCannotCarry: arguments a framework parsed
// into something JSON cannot carry as it is (1e400 read as Infinity, which
// JSON writes as null) are never asked about — the person would approve
// null and the tool get Infinity — and the call does not run; the same
// call with a finite number is asked about and allowed (the control).
func TestAdaptersRefuseArgumentsJSONCannotCarry(t *testing.T) {
	node := needNode(t)
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			CallID    string `json:"call_id"`
			Arguments string `json:"arguments"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		asked = append(asked, r.URL.Path+" "+body.Arguments)
		mu.Unlock()
		_, _ = io.WriteString(w, `{"call_id":"`+body.CallID+`","decision":"allow","via":"policy"}`)
	}))
	defer srv.Close()
	script := `
import { Countersign } from "./dist/client.js";
import { countersignAISDK } from "./dist/ai-sdk.js";
const cs = new Countersign({ baseUrl: process.env.BASE, apiKey: "test-key" });
const out = {};
for (const [name, text] of [["infinite", '{"amount":1e400}'], ["finite", '{"amount":5}']]) {
  const a = countersignAISDK({ countersign: cs, user: "u", connector: "k", conversationId: "c", turnId: "t" });
  const answer = await a.toolApproval({ toolCall: { toolCallId: "call-" + name, toolName: "pay", input: JSON.parse(text) }, messages: [] });
  let ran = false;
  const tools = a.tools({ pay: { execute: async () => { ran = true; return "paid"; } } });
  const result = await tools.pay.execute(JSON.parse(text), { toolCallId: "call-" + name, messages: [] });
  out[name] = { answer: answer.type + " " + (answer.reason ?? ""), ran, result };
}
process.stdout.write(JSON.stringify(out));
`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e", script)
	cmd.Env = append(cmd.Environ(), "BASE="+srv.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got map[string]struct {
		Answer string
		Ran    bool
		Result string
	}
	if err := json.Unmarshal(outb, &got); err != nil {
		t.Fatalf("%s: %v", outb, err)
	}
	if f := got["finite"]; f.Answer != "not-applicable " || !f.Ran || f.Result != "paid" {
		t.Fatalf("the allowed call with a finite amount: %+v (the control: the harness works)", f)
	}
	inf := got["infinite"]
	if !strings.HasPrefix(inf.Answer, "denied ") || !strings.Contains(inf.Answer, `"code":"policy_unavailable"`) || inf.Ran ||
		!strings.Contains(inf.Result, `"code":"policy_unavailable"`) {
		t.Fatalf("the call whose amount JSON cannot carry: %+v", inf)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0] != `/api/v1/tool-calls {"amount":5}` {
		t.Fatalf("Countersign was asked %q; want only the finite call", asked)
	}
}
