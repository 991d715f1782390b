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
