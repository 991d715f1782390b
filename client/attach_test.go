package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// A runtime that stops waiting tells the model where the item waits; the
// same call made again after approval runs once.
func TestGateWithinAgainstServer(t *testing.T) {
	e, c, member := realServer(t)
	ctx := context.Background()
	call := memberCall("w1", `{"to":"waits@example.com"}`)
	call.AttachToPending = true

	out, err := c.GateWithin(ctx, call, 200*time.Millisecond)
	wantClosed(t, out, err, client.CodeApprovalPending)
	id := out.ApprovalID
	link := e.BaseURL + "/approvals/" + id
	if err != nil || id == "" || out.URL != link || !strings.Contains(out.Message, link) || !strings.Contains(out.Message, "same call again") {
		t.Fatalf("%+v %v", out, err)
	}
	if s := dbStatus(t, e, id); s != "pending" {
		t.Fatalf("status after stopping to wait: %s", s)
	}

	// Still pending: the retry joins the same item and stops again.
	call.CallID = "w2"
	if out, err := c.GateWithin(ctx, call, 100*time.Millisecond); err != nil || out.Code != client.CodeApprovalPending || out.ApprovalID != id {
		t.Fatalf("retry while pending: %+v %v", out, err)
	}

	decide(t, member, id, url.Values{"decision": {"approve"}})
	call.CallID = "w3"
	out, err = c.GateWithin(ctx, call, 100*time.Millisecond)
	if err != nil || !out.Allowed || out.Via != "person" || out.Scope != "once" || out.ApprovalID != id {
		t.Fatalf("retry after approval: %+v %v", out, err)
	}
	var claims int
	if err := e.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'claimed'`, id).Scan(&claims); err != nil || claims != 1 {
		t.Fatalf("%d claims (%v)", claims, err)
	}

	// Used up: the same call once more asks again, on a new item.
	call.CallID = "w4"
	out, err = c.GateWithin(ctx, call, 100*time.Millisecond)
	if err != nil || out.Code != client.CodeApprovalPending || out.ApprovalID == id || out.ApprovalID == "" {
		t.Fatalf("after the claim: %+v %v", out, err)
	}
}

// attachedAnswer is a pending answer about an item an earlier call
// ("call-0") opened, for args.
func attachedAnswer(status, args string) http.HandlerFunc {
	return answer(http.StatusOK, fmt.Sprintf(`{"call_id":"call-1","decision":"pending","approval":{"id":%q,"call_id":"call-0","status":%q,"expires_at":%q,"arguments_digest":%q,"url":"https://cs.example/approvals/%s"}}`,
		approvalID, status, time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano), approval.Digest(args), approvalID))
}

func TestGateAttached(t *testing.T) {
	attach := gateCall
	attach.AttachToPending = true
	t.Run("ClaimsWithTheItemsCallID", func(t *testing.T) {
		s := wellBehaved(t)
		s.check = attachedAnswer("approved", callArgs)
		s.claim = func(w http.ResponseWriter, r *http.Request) {
			var b map[string]string
			if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b["call_id"] != "call-0" || b["arguments_digest"] != approval.Digest(callArgs) {
				t.Errorf("claim body %v (%v)", b, err)
			}
			answer(http.StatusOK, strings.Replace(consumedState, `"call-1"`, `"call-0"`, 1))(w, r)
		}
		out, err := s.start(t).Gate(context.Background(), attach)
		if err != nil || !out.Allowed || out.ApprovalID != approvalID {
			t.Fatalf("%+v %v", out, err)
		}
	})
	t.Run("PendingUntilMaxWait", func(t *testing.T) {
		s := wellBehaved(t)
		s.check = attachedAnswer("pending", callArgs)
		s.wait = answer(http.StatusOK, strings.Replace(state(`"pending"`, `,"url":"https://cs.example/approvals/`+approvalID+`"`), `"call-1"`, `"call-0"`, 1))
		out, err := s.start(t).GateWithin(context.Background(), attach, 50*time.Millisecond)
		if err != nil || out.Allowed || out.Code != "approval_pending" || out.URL != "https://cs.example/approvals/"+approvalID {
			t.Fatalf("%+v %v", out, err)
		}
	})
	cases := map[string]struct {
		call  client.Call
		check http.HandlerFunc
		why   string
	}{
		// Another call's item is only followed when the call asked to attach.
		"NotAsked": {gateCall, attachedAnswer("approved", callArgs), `about call "call-0"`},
		// ...and only for this call's arguments.
		"OtherArguments": {attach, attachedAnswer("approved", `{"to":"elsewhere"}`), "other arguments"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := wellBehaved(t)
			s.check = c.check
			s.claim = func(w http.ResponseWriter, r *http.Request) {
				t.Error("claimed an item it should not have followed")
				answer(http.StatusOK, consumedState)(w, r)
			}
			out, err := s.start(t).Gate(context.Background(), c.call)
			failure{why: c.why}.assert(t, out, err)
		})
	}
}

// GateNotify tells the runtime about the item, with its link, before it
// waits; an allowed call is not reported.
func TestGateNotify(t *testing.T) {
	e, c, member := realServer(t)
	ctx := context.Background()
	allowed := memberCall("n0", `{"query":"x"}`)
	allowed.Tool = "search_messages"
	out, err := c.GateNotify(ctx, allowed, time.Second, func(client.Outcome) { t.Error("reported an allowed call") })
	if err != nil || !out.Allowed {
		t.Fatalf("%+v %v", out, err)
	}
	seen := make(chan client.Outcome, 2)
	res := make(chan testenvResult, 1)
	go func() {
		out, err := c.GateNotify(ctx, memberCall("n1", `{"to":"n@example.com"}`), 0, func(o client.Outcome) { seen <- o })
		res <- testenvResult{out, err}
	}()
	p := <-seen
	if p.Code != client.CodeApprovalPending || p.ApprovalID == "" || p.URL != e.BaseURL+"/approvals/"+p.ApprovalID {
		t.Fatalf("reported %+v", p)
	}
	if s := dbStatus(t, e, p.ApprovalID); s != "pending" {
		t.Fatalf("reported while %s", s)
	}
	decide(t, member, p.ApprovalID, url.Values{"decision": {"reject"}})
	r := <-res
	wantClosed(t, r.out, r.err, "approval_denied")
	if r.out.ApprovalID != p.ApprovalID || len(seen) != 0 {
		t.Fatalf("%+v, %d more reports", r.out, len(seen))
	}
}

type testenvResult struct {
	out client.Outcome
	err error
}
