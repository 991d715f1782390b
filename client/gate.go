package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/countersign/countersign/approval"
)

type approvalState struct {
	ID              string    `json:"id"`
	CallID          string    `json:"call_id"`
	Status          string    `json:"status"`
	Scope           string    `json:"scope"`
	Code            string    `json:"code"`
	Message         string    `json:"message"`
	ExpiresAt       time.Time `json:"expires_at"`
	ExpiresInMS     *int64    `json:"expires_in_ms"` // left by the server's clock; absent from older servers
	ArgumentsDigest string    `json:"arguments_digest"`
	URL             string    `json:"url"`
	Proof           string    `json:"proof"` // on a claim's answer: "passkey" or "session"
	// PreImages, on a claim's answer: the file hashes of the diff the
	// person approved (nil when the server did not say).
	PreImages []approval.PreImage `json:"pre_images"`
	// Grant, on a claim's answer: the scoped grant the person's approval
	// made (nil when none, or from a server that does not say).
	Grant *Grant `json:"grant"`
}

type checkResponse struct {
	CallID   string         `json:"call_id"`
	Decision string         `json:"decision"`
	Code     string         `json:"code"`
	Message  string         `json:"message"`
	Via      string         `json:"via"`
	Approval *approvalState `json:"approval"`
}

// Gate checks call, waits for a decision if a person must decide, and
// claims the approval for exactly this call id and these arguments. The
// returned Outcome is always safe to act on; the error, when not nil,
// explains a policy_unavailable outcome for the logs.
//
// Gate lets the call run only on an answer it fully understands: an allow
// for this call id, or a claim that reports this approval consumed for this
// call and digest. Anything else — an unknown decision or status, a
// missing field, an answer about another call — is policy_unavailable.
func (c *Client) Gate(ctx context.Context, call Call) (Outcome, error) {
	return c.GateWithin(ctx, call, 0)
}

// GateWithin is Gate that waits for a person at most maxWait (0: until the
// item settles). When nobody has answered by then it returns an Outcome
// with code approval_pending, the item's link in URL and a message telling
// the model the call waits for approval at that link and can be made again
// once approved. Runtimes that are themselves cut off after a while (an
// agent's hook, an MCP client) use it so that they answer before they are
// cut off, which for some of them would let the call run unchecked.
//
// With call.AttachToPending the item may be one an earlier identical call
// opened: Gate then follows and claims that item with its own call id, and
// only if its digest is this call's.
func (c *Client) GateWithin(ctx context.Context, call Call, maxWait time.Duration) (Outcome, error) {
	return c.GateNotify(ctx, call, maxWait, nil)
}

// GateNotify is GateWithin that calls pending, once and before it waits,
// when a person must decide: with code approval_pending, the item's id and
// its link. A runtime uses it to show the link while the call waits (an
// MCP gateway's progress notifications). pending must not block.
func (c *Client) GateNotify(ctx context.Context, call Call, maxWait time.Duration, pending func(Outcome)) (Outcome, error) {
	var stopAt time.Time
	if maxWait > 0 {
		stopAt = time.Now().Add(maxWait)
	}
	out, p, err := c.Check(ctx, call)
	if p == nil {
		return out, err
	}
	if pending != nil {
		pending(Outcome{Code: CodeApprovalPending, ApprovalID: p.ApprovalID, URL: p.URL})
	}
	var left time.Duration
	if !stopAt.IsZero() {
		left = max(time.Until(stopAt), time.Nanosecond)
	}
	approved, out, err := c.Await(ctx, call, *p, left)
	if !approved {
		return out, err
	}
	if out.Scope != "" {
		// The scope the person chose, as the wait reported it.
		p.first = &approvalState{ID: p.ApprovalID, Scope: out.Scope}
	}
	return c.Claim(ctx, call, *p)
}

// Pending is an item a person must decide, as the check answered it:
// what a runtime keeps to follow the item later, from another process
// too (an MCP task picked up by a new gateway process).
type Pending struct {
	ApprovalID string `json:"approval_id"`
	// ItemCallID is the call the item was opened for: the checked call's
	// own id, or an earlier identical call's when the check attached.
	ItemCallID string `json:"item_call_id"`
	URL        string `json:"url,omitempty"` // the item's page, where the person decides
	// GiveUp is when waiting on the item stays pointless: its expiry plus
	// a grace for the server to report it (in one process by the
	// monotonic clock, see giveUpAt).
	GiveUp time.Time `json:"give_up"`

	first *approvalState // the check's own answer, in the process that checked
}

// Check asks once whether call may run, without waiting. A person must
// decide when the returned Pending is not nil; otherwise the Outcome is
// the answer (allowed, or not allowed with a code), and the error, when
// not nil, explains a policy_unavailable outcome for the logs.
func (c *Client) Check(ctx context.Context, call Call) (Outcome, *Pending, error) {
	var res checkResponse
	asked := time.Now()
	if err := c.do(ctx, http.MethodPost, "/api/v1/tool-calls", call, &res); err != nil {
		return unavailable(call, ""), nil, err
	}
	if res.CallID != call.CallID {
		return unavailable(call, ""), nil, fmt.Errorf("countersign: answer for call %q, not %q", res.CallID, call.CallID)
	}
	switch res.Decision {
	case "allow":
		return Outcome{Allowed: true, Via: res.Via}, nil, nil
	case "deny":
		var id string
		if res.Approval != nil {
			id = res.Approval.ID // the call sent again: its earlier item's end
		}
		out, err := notAllowed(call, res.Code, res.Message, id)
		return out, nil, err
	case "pending":
		if res.Approval == nil || res.Approval.ID == "" {
			return unavailable(call, ""), nil, errors.New("countersign: pending answer without an approval")
		}
	default:
		return unavailable(call, ""), nil, fmt.Errorf("countersign: unknown decision %q", res.Decision)
	}
	item, err := itemCall(call, res.Approval)
	if err != nil {
		return unavailable(call, res.Approval.ID), nil, err
	}
	return Outcome{Code: CodeApprovalPending, ApprovalID: res.Approval.ID, URL: res.Approval.URL},
		&Pending{ApprovalID: res.Approval.ID, ItemCallID: item, URL: res.Approval.URL, GiveUp: giveUpAt(asked, res.Approval), first: res.Approval}, nil
}

// Await waits on the item p until a person decided it or maxWait has
// passed (0: until it settles). approved is true when the person
// approved: the call may run only after Claim. Otherwise out is the
// answer: approval_pending when the wait ended first, the item's end
// (rejected, expired, cancelled) with its code, or policy_unavailable.
func (c *Client) Await(ctx context.Context, call Call, p Pending, maxWait time.Duration) (approved bool, out Outcome, err error) {
	var stopAt time.Time
	if maxWait > 0 {
		stopAt = time.Now().Add(maxWait)
	}
	a := p.first
	if a == nil {
		// Picked up later: the item was pending when it was checked.
		a = &approvalState{ID: p.ApprovalID, CallID: p.ItemCallID, Status: string(approval.StatusPending), URL: p.URL}
	}
	st, err := c.wait(ctx, p.ItemCallID, a, p.GiveUp, stopAt)
	if err != nil {
		return false, unavailable(call, p.ApprovalID), err
	}
	switch st.Status {
	case string(approval.StatusPending):
		return false, stillPending(call, st), nil
	case string(approval.StatusApproved):
		return true, Outcome{Scope: st.Scope}, nil
	case string(approval.StatusRejected), string(approval.StatusExpired), string(approval.StatusCancelled):
		out, err := notAllowed(call, st.Code, st.Message, st.ID)
		return false, out, err
	}
	// consumed (by someone else) or a status this client does not know.
	return false, unavailable(call, st.ID), fmt.Errorf("countersign: approval ended as %q", st.Status)
}

// Claim binds the approved item p to this very call (its id and the digest
// of its arguments) before it runs: once only, whichever process asks.
func (c *Client) Claim(ctx context.Context, call Call, p Pending) (Outcome, error) {
	st := approvalState{ID: p.ApprovalID}
	if p.first != nil {
		st.Scope = p.first.Scope
	}
	return c.claim(ctx, call, p.ItemCallID, st)
}

// itemCall is the call id the item was opened for: this call's, or — only
// when the call asked to attach — an earlier identical call's, whose digest
// must then be this call's. A server that does not send the item's call id
// answers about this call.
func itemCall(call Call, a *approvalState) (string, error) {
	if a.CallID == "" || a.CallID == call.CallID {
		return call.CallID, nil
	}
	if !call.AttachToPending {
		return "", fmt.Errorf("countersign: pending answer about call %q, not %q", a.CallID, call.CallID)
	}
	if a.ArgumentsDigest != approval.Digest(call.Arguments) {
		return "", fmt.Errorf("countersign: attached to approval %q for other arguments", a.ID)
	}
	return a.CallID, nil
}

// stillPending is the answer when the runtime stopped waiting first.
func stillPending(call Call, st approvalState) Outcome {
	return Outcome{Code: CodeApprovalPending, ApprovalID: st.ID, URL: st.URL,
		Message: approval.Message(approval.CodeApprovalPending, approval.MessageInput{Tool: call.Tool, URL: st.URL})}
}

// giveUpAt is when waiting on a stays pointless: its expiry plus a grace
// for the server to report it. The time left comes from the server (by the
// database's clock) and is counted on this process's monotonic clock from
// when the check was sent, so a runtime whose wall clock is off neither
// gives up early nor waits on forever. Older servers send only expires_at.
func giveUpAt(asked time.Time, a *approvalState) time.Time {
	const grace = 30 * time.Second
	if a.ExpiresInMS != nil {
		return asked.Add(time.Duration(max(*a.ExpiresInMS, 0))*time.Millisecond + grace)
	}
	return a.ExpiresAt.Add(grace)
}

// minPoll is the least time between two polls: a server that answers a
// long-poll at once while the item is pending is not polled in a tight loop.
const minPoll = 250 * time.Millisecond

// wait long-polls until the item settles, stopAt (when set) has passed —
// then it returns the item still pending — or giveUp has passed. callID is
// the item's call.
func (c *Client) wait(ctx context.Context, callID string, a *approvalState, giveUp, stopAt time.Time) (approvalState, error) {
	st := *a
	var last time.Time
	for st.Status == string(approval.StatusPending) || st.Status == "" {
		if time.Now().After(giveUp) {
			return st, errors.New("countersign: approval still pending after its expiry")
		}
		pause := minPoll - time.Since(last)
		if !stopAt.IsZero() {
			pause = min(pause, time.Until(stopAt))
		}
		if !last.IsZero() && pause > 0 {
			select {
			case <-ctx.Done():
				return st, ctx.Err()
			case <-time.After(pause):
			}
		}
		last = time.Now()
		wait := c.PollWait
		if wait <= 0 {
			wait = 30 * time.Second
		}
		if !stopAt.IsZero() {
			left := time.Until(stopAt).Truncate(time.Millisecond)
			if left <= 0 && st.Status == string(approval.StatusPending) {
				return st, nil
			}
			wait = max(min(wait, left), time.Millisecond)
		}
		path := "/api/v1/approvals/" + url.PathEscape(a.ID) + "?wait=" + url.QueryEscape(wait.String())
		st = approvalState{}
		if err := c.do(ctx, http.MethodGet, path, nil, &st); err != nil {
			return st, err
		}
		if st.ID != a.ID || st.CallID != callID {
			return st, fmt.Errorf("countersign: answer about approval %q of call %q, not %q of %q", st.ID, st.CallID, a.ID, callID)
		}
		if st.URL == "" {
			st.URL = a.URL
		}
	}
	return st, nil
}

// claim binds the approval to this very call before it runs; callID is the
// item's call (an earlier identical call's when attached).
func (c *Client) claim(ctx context.Context, call Call, callID string, st approvalState) (Outcome, error) {
	digest := approval.Digest(call.Arguments)
	body := map[string]string{"call_id": callID, "arguments_digest": digest}
	var claimed approvalState
	err := c.do(ctx, http.MethodPost, "/api/v1/approvals/"+url.PathEscape(st.ID)+"/claim", body, &claimed)
	// Only an answer saying this approval is now consumed for this call and
	// these arguments lets the call run; an empty or other 2xx does not.
	if err == nil && (claimed.Status != string(approval.StatusConsumed) || claimed.ID != st.ID ||
		claimed.CallID != callID || claimed.ArgumentsDigest != digest) {
		err = fmt.Errorf("countersign: claim answered without consuming approval %q for this call (status %q)", st.ID, claimed.Status)
	}
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusConflict && e.Code == string(approval.CodeBlockedByPolicy) {
		// An admin blocked the tool after the person approved: the model is
		// told so, not that the check failed.
		return notAllowed(call, e.Code, "", st.ID)
	}
	if err != nil {
		return unavailable(call, st.ID), err
	}
	if call.Proof == "passkey" && claimed.Proof != "passkey" {
		// Asked for a passkey, approved without one (a server that ignores
		// the ask): the call does not run.
		return unavailable(call, st.ID), fmt.Errorf("countersign: approval %q was made without the passkey this call asked for", st.ID)
	}
	// A check that attached to an approved item carries no scope; the
	// claim's answer does.
	scope := st.Scope
	if scope == "" {
		scope = claimed.Scope
	}
	out := Outcome{Allowed: true, Via: "person", Scope: scope, ApprovalID: st.ID, Proof: claimed.Proof, PreImages: claimed.PreImages}
	if g := claimed.Grant; g != nil && scope == string(approval.ScopeAlways) && (g.Scope.Shell == nil) != (g.Scope.Args == nil) {
		out.Grant = g
	}
	return out, nil
}

// notAllowed is a deny or a terminal status as the server reported it. A
// server answer without a code is not understood, so it is
// policy_unavailable; a missing message is filled in for the model.
func notAllowed(call Call, code, message, approvalID string) (Outcome, error) {
	if code == "" {
		return unavailable(call, approvalID), errors.New("countersign: not allowed without a code")
	}
	if message == "" {
		message = approval.Message(approval.ReasonCode(code), approval.MessageInput{Tool: call.Tool})
	}
	return Outcome{Code: code, Message: message, ApprovalID: approvalID}, nil
}

// CancelTurn cancels a stopped turn's pending approvals; it returns how many.
func (c *Client) CancelTurn(ctx context.Context, user, conversationID, turnID string) (int, error) {
	var res struct {
		Cancelled int `json:"cancelled"`
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/turns/cancel",
		map[string]string{"user": user, "conversation_id": conversationID, "turn_id": turnID}, &res)
	return res.Cancelled, err
}

func unavailable(call Call, approvalID string) Outcome {
	return Outcome{Code: CodePolicyUnavailable, ApprovalID: approvalID,
		Message: approval.Message(approval.CodePolicyUnavailable, approval.MessageInput{Tool: call.Tool})}
}
