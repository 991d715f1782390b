package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
)

// The harness itself lets a well-behaved approval through; every failing
// script below differs from it in one answer.
func TestGateScriptedApproval(t *testing.T) {
	out, err := wellBehaved(t).start(t).Gate(context.Background(), gateCall)
	if err != nil || !out.Allowed || out.Via != "person" || out.Scope != "once" || out.ApprovalID != approvalID || out.Code != "" {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestGateFailsClosedOnCheck(t *testing.T) {
	cases := map[string]failure{
		"ServerError":         {answer(http.StatusInternalServerError, `{"error":{"code":"internal","message":"Something went wrong."}}`), "500 internal"},
		"BadGatewayHTML":      {answer(http.StatusBadGateway, `<html><body>502 Bad Gateway</body></html>`), "502"},
		"Unavailable":         {answer(http.StatusServiceUnavailable, ``), "503"},
		"NotJSON":             {answer(http.StatusOK, `<html>allow</html>`), "unreadable answer"},
		"EmptyBody":           {answer(http.StatusOK, ``), "answer for call"},
		"NoContent":           {answer(http.StatusNoContent, ``), "answer for call"},
		"Null":                {answer(http.StatusOK, `null`), "answer for call"},
		"MissingDecision":     {answer(http.StatusOK, `{"call_id":"call-1","via":"policy"}`), `unknown decision ""`},
		"DecisionNotString":   {answer(http.StatusOK, `{"call_id":"call-1","decision":true}`), "unreadable answer"},
		"AllowWithWrongTypes": {answer(http.StatusOK, `{"call_id":"call-1","decision":"allow","via":7}`), "unreadable answer"},
		"Truncated":           {answer(http.StatusOK, `{"call_id":"call-1","decision":"allo`), "unreadable answer"},
		"TrailingGarbage":     {answer(http.StatusOK, `{"call_id":"call-1","decision":"allow"}{"decision":"deny"}`), "unreadable answer"},
		"UnknownDecision":     {answer(http.StatusOK, `{"call_id":"call-1","decision":"maybe"}`), `unknown decision "maybe"`},
		"DecisionWrongCase":   {answer(http.StatusOK, `{"call_id":"call-1","decision":"ALLOW","via":"policy"}`), `unknown decision "ALLOW"`},
		"AllowForOtherCall":   {answer(http.StatusOK, `{"call_id":"call-2","decision":"allow","via":"policy"}`), `answer for call "call-2"`},
		"AllowWithoutCallID":  {answer(http.StatusOK, `{"decision":"allow","via":"policy"}`), `answer for call ""`},
		"DenyWithoutCode":     {answer(http.StatusOK, `{"call_id":"call-1","decision":"deny"}`), "without a code"},
		"PendingNoApproval":   {answer(http.StatusOK, `{"call_id":"call-1","decision":"pending"}`), "without an approval"},
		"PendingNoApprovalID": {answer(http.StatusOK, `{"call_id":"call-1","decision":"pending","approval":{"status":"pending","expires_at":"2999-01-01T00:00:00Z"}}`), "without an approval"},
		"HangUp":              {hangUp, "EOF"},
		"CutOff":              {cutOff(`{"call_id":"call-1","decision":"allow","via":"policy"}`), "unexpected EOF"},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			s := wellBehaved(t)
			s.check = f.answer
			out, err := s.start(t).Gate(context.Background(), gateCall)
			f.assert(t, out, err)
		})
	}
	t.Run("ConnectionRefused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close() // nothing listens on its address any more
		out, err := client.New(srv.URL, "cs_test").Gate(context.Background(), gateCall)
		failure{why: "connection refused"}.assert(t, out, err)
	})
	t.Run("BadKey", func(t *testing.T) {
		c := wellBehaved(t).start(t)
		c.APIKey = "cs_other"
		out, err := c.Gate(context.Background(), gateCall)
		failure{why: "401 unauthorized"}.assert(t, out, err)
	})
}

// A deny passes the server's code and message on; a deny whose message is
// missing still tells the model something.
func TestGateDeny(t *testing.T) {
	s := wellBehaved(t)
	s.check = answer(http.StatusOK, `{"call_id":"call-1","decision":"deny","code":"blocked_by_policy","message":"An administrator has blocked it."}`)
	out, err := s.start(t).Gate(context.Background(), gateCall)
	wantClosed(t, out, err, "blocked_by_policy")
	if err != nil || out.Message != "An administrator has blocked it." {
		t.Fatalf("%+v %v", out, err)
	}
	s.check = answer(http.StatusOK, `{"call_id":"call-1","decision":"deny","code":"blocked_by_policy"}`)
	out, err = s.start(t).Gate(context.Background(), gateCall)
	wantClosed(t, out, err, "blocked_by_policy")
	if !strings.Contains(out.Message, "send_email") {
		t.Fatalf("message %q does not name the tool", out.Message)
	}
}

func TestGateFailsClosedOnWait(t *testing.T) {
	cases := map[string]failure{
		"ServerError":     {answer(http.StatusInternalServerError, `{"error":{"code":"internal","message":"Something went wrong."}}`), "500 internal"},
		"GatewayTimeout":  {answer(http.StatusGatewayTimeout, `upstream timed out`), "504"},
		"NotFound":        {answer(http.StatusNotFound, `{"error":{"code":"not_found","message":"No such approval."}}`), "404 not_found"},
		"NotJSON":         {answer(http.StatusOK, `approved`), "unreadable answer"},
		"Truncated":       {answer(http.StatusOK, approvedState[:len(approvedState)/2]), "unreadable answer"},
		"StatusNotString": {answer(http.StatusOK, state(`1`, ``)), "unreadable answer"},
		"UnknownStatus":   {answer(http.StatusOK, state(`"maybe"`, ``)), `ended as "maybe"`},
		"UnknownWithCode": {answer(http.StatusOK, state(`"maybe"`, `,"code":"approval_denied","message":"x"`)), `ended as "maybe"`},
		"AlreadyConsumed": {answer(http.StatusOK, consumedState), `ended as "consumed"`},
		"RejectedNoCode":  {answer(http.StatusOK, state(`"rejected"`, ``)), "without a code"},
		"OtherApproval":   {answer(http.StatusOK, strings.Replace(approvedState, approvalID, otherID, 1)), "answer about approval"},
		"OtherCall":       {answer(http.StatusOK, strings.Replace(approvedState, `"call-1"`, `"call-2"`, 1)), "answer about approval"},
		"HangUp":          {hangUp, "EOF"},
		"CutOff":          {cutOff(approvedState), "unexpected EOF"},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			s := wellBehaved(t)
			s.wait = f.answer
			s.claim = func(w http.ResponseWriter, r *http.Request) { t.Error("claimed a call that was not approved") }
			out, err := s.start(t).Gate(context.Background(), gateCall)
			f.assert(t, out, err)
		})
	}
	t.Run("StillPendingAfterExpiry", func(t *testing.T) {
		var polls atomic.Int32
		s := wellBehaved(t)
		s.check = pendingAnswer(time.Now().Add(-time.Hour))
		s.wait = func(w http.ResponseWriter, r *http.Request) {
			if polls.Add(1) > 20 {
				t.Error("the client keeps waiting on an item long past its expiry")
				answer(http.StatusInternalServerError, ``)(w, r)
				return
			}
			answer(http.StatusOK, state(`"pending"`, ``))(w, r)
		}
		out, err := s.start(t).Gate(context.Background(), gateCall)
		failure{why: "pending after its expiry"}.assert(t, out, err)
	})
}

// Terminal answers pass the server's code and message on.
func TestGateTerminalStatuses(t *testing.T) {
	for status, code := range map[string]string{"rejected": "approval_denied", "expired": "approval_timeout", "cancelled": "approval_cancelled"} {
		t.Run(code, func(t *testing.T) {
			s := wellBehaved(t)
			s.wait = answer(http.StatusOK, state(`"`+status+`"`, `,"code":"`+code+`","message":"From the server."`))
			s.claim = func(w http.ResponseWriter, r *http.Request) { t.Error("claimed a call that was not approved") }
			out, err := s.start(t).Gate(context.Background(), gateCall)
			wantClosed(t, out, err, code)
			if err != nil || out.Message != "From the server." || out.ApprovalID != approvalID {
				t.Fatalf("%+v %v", out, err)
			}
		})
	}
	t.Run("ExpiredWithoutMessage", func(t *testing.T) {
		s := wellBehaved(t)
		s.wait = answer(http.StatusOK, state(`"expired"`, `,"code":"approval_timeout"`))
		out, err := s.start(t).Gate(context.Background(), gateCall)
		wantClosed(t, out, err, "approval_timeout")
		if !strings.Contains(out.Message, "in time") {
			t.Fatalf("message %q", out.Message)
		}
	})
}

func TestGateFailsClosedOnClaim(t *testing.T) {
	cases := map[string]failure{
		"Consumed":         {answer(http.StatusConflict, `{"error":{"code":"consumed","message":"This approval was already used."}}`), "409 consumed"},
		"Mismatch":         {answer(http.StatusConflict, `{"error":{"code":"call_mismatch","message":"different call"}}`), "409 call_mismatch"},
		"ServerError":      {answer(http.StatusInternalServerError, `{"error":{"code":"internal","message":"Something went wrong."}}`), "500 internal"},
		"BadGateway":       {answer(http.StatusBadGateway, `<html>bad gateway</html>`), "502"},
		"NotJSON":          {answer(http.StatusOK, `ok`), "unreadable answer"},
		"EmptyBody":        {answer(http.StatusOK, ``), "without consuming"},
		"NoContent":        {answer(http.StatusNoContent, ``), "without consuming"},
		"EmptyObject":      {answer(http.StatusOK, `{}`), "without consuming"},
		"StillApproved":    {answer(http.StatusOK, approvedState), "without consuming"},
		"OtherApproval":    {answer(http.StatusOK, strings.Replace(consumedState, approvalID, otherID, 1)), "without consuming"},
		"OtherCall":        {answer(http.StatusOK, strings.Replace(consumedState, `"call-1"`, `"call-2"`, 1)), "without consuming"},
		"OtherArguments":   {answer(http.StatusOK, strings.Replace(consumedState, `"sha256:`, `"sha256:00`, 1)), "without consuming"},
		"Truncated":        {answer(http.StatusOK, consumedState[:len(consumedState)-10]), "unreadable answer"},
		"StatusNotAString": {answer(http.StatusOK, strings.Replace(consumedState, `"consumed"`, `true`, 1)), "unreadable answer"},
		"HangUp":           {hangUp, "EOF"},
		"CutOff":           {cutOff(consumedState), "unexpected EOF"},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			s := wellBehaved(t)
			s.claim = f.answer
			out, err := s.start(t).Gate(context.Background(), gateCall)
			f.assert(t, out, err)
			if out.ApprovalID != approvalID {
				t.Fatalf("approval id %q", out.ApprovalID)
			}
		})
	}
}

func TestGateContext(t *testing.T) {
	t.Run("CancelledBeforehand", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		out, err := wellBehaved(t).start(t).Gate(ctx, gateCall)
		wantClosed(t, out, err, client.CodePolicyUnavailable)
		if !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	})
	for _, step := range []string{"check", "wait", "claim"} {
		t.Run("DeadlineDuring_"+step, func(t *testing.T) {
			s := wellBehaved(t)
			switch step {
			case "check":
				s.check = holdUntilGone
			case "wait":
				s.wait = holdUntilGone
			case "claim":
				s.claim = holdUntilGone
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			out, err := s.start(t).Gate(ctx, gateCall)
			wantClosed(t, out, err, client.CodePolicyUnavailable)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatal(err)
			}
		})
	}
	t.Run("HTTPClientTimeout", func(t *testing.T) {
		s := wellBehaved(t)
		s.wait = holdUntilGone
		c := s.start(t)
		c.HTTP.Timeout = 200 * time.Millisecond
		out, err := c.Gate(context.Background(), gateCall)
		wantClosed(t, out, err, client.CodePolicyUnavailable)
	})
}
