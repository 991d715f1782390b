package client_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// An admin who blocks the tool after the person approved wins: the claim's
// 409 blocked_by_policy reaches the model as that code, not as a failed
// check, and the call does not run.
func TestGateClaimBlockedByPolicy(t *testing.T) {
	s := wellBehaved(t)
	s.claim = answer(http.StatusConflict, `{"error":{"code":"blocked_by_policy","message":"blocked"}}`)
	out, err := s.start(t).Gate(context.Background(), gateCall)
	if err != nil || out.Allowed || out.Code != string(approval.CodeBlockedByPolicy) || out.ApprovalID != approvalID {
		t.Fatalf("outcome %+v (err %v), want not allowed with blocked_by_policy", out, err)
	}
	if want := approval.Message(approval.CodeBlockedByPolicy, approval.MessageInput{Tool: gateCall.Tool}); out.Message != want {
		t.Fatalf("message %q, want %q", out.Message, want)
	}
}

// pendingIn answers the check with an item whose expires_at lies an hour
// in the past by this machine's clock while the server says it has
// expiresIn left: the runtime's clock is an hour ahead of the database's.
func pendingIn(expiresIn time.Duration) http.HandlerFunc {
	return answer(http.StatusOK, fmt.Sprintf(`{"call_id":"call-1","decision":"pending","approval":{"id":%q,"status":"pending","expires_at":%q,"expires_in_ms":%d,"arguments_digest":%q}}`,
		approvalID, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano), expiresIn.Milliseconds(), approval.Digest(callArgs)))
}

// The time an item has left comes from the server, so a runtime whose
// clock runs ahead keeps waiting and runs the call once approved.
func TestGateWaitFollowsTheServersClock(t *testing.T) {
	var polls atomic.Int32
	s := wellBehaved(t)
	s.check = pendingIn(10 * time.Minute)
	s.wait = func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) < 3 {
			answer(http.StatusOK, strings.Replace(state(`"pending"`, ``), `"status"`, `"expires_in_ms":600000,"status"`, 1))(w, r)
			return
		}
		answer(http.StatusOK, approvedState)(w, r)
	}
	c := s.start(t)
	out, err := c.Gate(context.Background(), gateCall)
	if err != nil || !out.Allowed || out.Via != "person" {
		t.Fatalf("outcome %+v (err %v): the call was given up on by this machine's clock", out, err)
	}
	if polls.Load() != 3 {
		t.Fatalf("%d polls, want 3", polls.Load())
	}
}

// A server that answers every long-poll at once while the item is pending
// is not polled in a tight loop.
func TestGateDoesNotSpinOnAnEagerServer(t *testing.T) {
	var polls atomic.Int32
	s := wellBehaved(t)
	s.wait = func(w http.ResponseWriter, r *http.Request) {
		polls.Add(1)
		answer(http.StatusOK, state(`"pending"`, ``))(w, r)
	}
	out, err := s.start(t).GateWithin(context.Background(), gateCall, time.Second)
	if err != nil || out.Allowed || out.Code != client.CodeApprovalPending {
		t.Fatalf("outcome %+v (err %v), want approval_pending", out, err)
	}
	// One second at no less than 250 ms between polls: at most five, plus
	// the first. Without the pause this is in the hundreds.
	if n := polls.Load(); n > 6 {
		t.Fatalf("%d polls in one second", n)
	}
}
