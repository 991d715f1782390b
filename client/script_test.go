package client_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// These tests put Gate in front of servers that misbehave on purpose: each
// script answers the three requests Gate makes (check, wait, claim) and
// differs from a well-behaved server in one answer only.

const (
	approvalID = "0b7f5a52-8d39-4a3c-9d0e-5c1f2a3b4c5d"
	otherID    = "11111111-2222-3333-4444-555555555555"
	callArgs   = `{"to":"finance@acme.example","amount":4471}`
)

var gateCall = client.Call{CallID: "call-1", User: "user-subject", ConversationID: "conv-1", TurnID: "turn-1",
	Connector: "mail", Tool: "send_email", Arguments: callArgs}

// script is a scripted Countersign: one handler per step; a nil step
// answers 404.
type script struct {
	check, wait, claim http.HandlerFunc
}

// start serves s and returns a client for it.
func (s script) start(t *testing.T) *client.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var h http.HandlerFunc
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/tool-calls":
			h = s.check
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/approvals/"+approvalID+"/claim":
			h = s.claim
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/approvals/"+approvalID:
			h = s.wait
		}
		if r.Header.Get("Authorization") != "Bearer cs_test" {
			h = answer(http.StatusUnauthorized, `{"error":{"code":"unauthorized","message":"no key"}}`)
		}
		if h == nil {
			h = answer(http.StatusNotFound, `{"error":{"code":"not_found","message":"No such thing."}}`)
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return client.New(srv.URL, "cs_test")
}

// wellBehaved is a server on which a person approves the call once.
func wellBehaved(t *testing.T) script {
	return script{check: pendingAnswer(time.Now().Add(10 * time.Minute)), wait: answer(http.StatusOK, approvedState), claim: goodClaim(t)}
}

// answer always replies status with body.
func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func pendingAnswer(expires time.Time) http.HandlerFunc {
	return answer(http.StatusOK, fmt.Sprintf(`{"call_id":"call-1","decision":"pending","approval":{"id":%q,"status":"pending","expires_at":%q,"arguments_digest":%q}}`,
		approvalID, expires.UTC().Format(time.RFC3339Nano), approval.Digest(callArgs)))
}

// state is the approval as the server reports it, with status (JSON text)
// and more fields (JSON text starting with a comma, or empty).
func state(status, more string) string {
	return `{"id":"` + approvalID + `","call_id":"call-1","status":` + status + more + `,"arguments_digest":"` + approval.Digest(callArgs) + `"}`
}

var (
	approvedState = state(`"approved"`, `,"scope":"once"`)
	consumedState = state(`"consumed"`, `,"scope":"once"`)
)

// goodClaim consumes the approval when the claim names this call and
// digest, and answers 409 otherwise, as Countersign does.
func goodClaim(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b map[string]string
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b["call_id"] != "call-1" || b["arguments_digest"] != approval.Digest(callArgs) {
			t.Errorf("claim body %v (%v)", b, err)
			answer(http.StatusConflict, `{"error":{"code":"call_mismatch","message":"different call"}}`)(w, r)
			return
		}
		answer(http.StatusOK, consumedState)(w, r)
	}
}

// hangUp closes the connection without answering.
func hangUp(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// cutOff starts a 200 answer and closes the connection half way through.
func cutOff(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:len(body)/2])
		buf.Flush()
		conn.Close()
	}
}

// holdUntilGone answers nothing until the client goes away. (The server
// notices a closed connection only once the request body has been read.)
func holdUntilGone(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// failure is a misbehaving answer and what the client's error must say
// about it, so that each case fails closed for its own reason.
type failure struct {
	answer http.HandlerFunc
	why    string
}

func (f failure) assert(t *testing.T, out client.Outcome, err error) {
	t.Helper()
	wantClosed(t, out, err, client.CodePolicyUnavailable)
	if !strings.Contains(err.Error(), f.why) {
		t.Fatalf("error %q, want it to say %q", err, f.why)
	}
}

// wantClosed asserts that out does not let the tool run and carries code
// with a message for the model; a policy_unavailable outcome must also
// explain itself with an error for the logs.
func wantClosed(t *testing.T, out client.Outcome, err error, code string) {
	t.Helper()
	if out.Allowed || out.Code != code || out.Message == "" || out.Via != "" || out.Scope != "" {
		t.Fatalf("outcome %+v (err %v), want not allowed with code %s and a message", out, err, code)
	}
	if code == client.CodePolicyUnavailable {
		if err == nil {
			t.Fatal("policy_unavailable without an error for the logs")
		}
		if want := approval.Message(approval.CodePolicyUnavailable, approval.MessageInput{Tool: gateCall.Tool}); out.Message != want {
			t.Fatalf("message %q, want %q", out.Message, want)
		}
	}
}
