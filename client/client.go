// Package client is the Go package agent runtimes use to ask Countersign
// whether a tool call may run.
//
// Call Gate right before executing a tool. It checks the call, waits for a
// person when one must decide, claims an approval for exactly this call,
// and returns an Outcome. Run the tool only when Outcome.Allowed is true;
// otherwise give Outcome.Code and Outcome.Message to the model. Every
// failure along the way — network, server, timeout — is an Outcome with
// code policy_unavailable: the client fails closed.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
)

// Client talks to one Countersign server with one runtime API key.
type Client struct {
	BaseURL string
	APIKey  string
	HTTP    *http.Client
	// PollWait is how long one long-poll may last (the server caps it at 60s).
	PollWait time.Duration
}

// New returns a client for the server at baseURL.
func New(baseURL, apiKey string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), APIKey: apiKey,
		HTTP: &http.Client{Timeout: 90 * time.Second}, PollWait: 30 * time.Second}
}

// Call is one tool call the model wants to make.
type Call struct {
	CallID         string `json:"call_id"`
	User           string `json:"user"` // OIDC subject of the conversation's owner
	ConversationID string `json:"conversation_id"`
	// ConversationTitle (optional) is the conversation's label, shown to
	// the reviewer in place of its id.
	ConversationTitle string `json:"conversation_title,omitempty"`
	TurnID            string `json:"turn_id"`
	Connector         string `json:"connector"`
	Tool              string `json:"tool"`
	Arguments         string `json:"arguments"` // the JSON text the model produced, unchanged
	Reason            string `json:"reason,omitempty"`
	PlaybookRunID     string `json:"playbook_run_id,omitempty"`
	// AttachToPending makes the same call made again (same key, user,
	// conversation, connector, tool and arguments, any call id) join the
	// item an earlier call opened, pending or approved and not yet claimed,
	// instead of asking again. Set it where a retry is the same action — an
	// agent's hook or a gateway that stops waiting — not where two identical
	// calls may be two intended actions.
	AttachToPending bool `json:"attach_to_pending,omitempty"`
	// Runtime (optional) is what this runtime says about itself; the card
	// names it beside the API key's name.
	Runtime *Runtime `json:"runtime,omitempty"`
	// Context (optional) is what the runtime computed for the reviewer,
	// such as the diff of an edit. It is never part of the digest: the
	// approval binds to Arguments.
	Context *CallContext `json:"context,omitempty"`
}

// Runtime is what a runtime says about itself, shown to the reviewer as
// untrusted text. Each field is optional: Client and Host at most 200
// characters, WorkingDirectory at most 4,096, none with control characters.
type Runtime struct {
	Client           string `json:"client,omitempty"`            // name and version, e.g. "Claude Code 2.1.328"
	Host             string `json:"host,omitempty"`              // the machine's host name
	WorkingDirectory string `json:"working_directory,omitempty"` // the agent's working directory
}

// CallContext is context a runtime computed for the reviewer.
type CallContext struct {
	// Diff is a unified diff of what the call changes (at most 1 MiB),
	// computed where the files are; shown line by line on the card.
	Diff string `json:"diff,omitempty"`
}

// Outcome is what the runtime acts on.
type Outcome struct {
	Allowed    bool
	Via        string // policy, conversation_grant, always_allow, preapproval, or person
	Scope      string // once, conversation or always, when a person approved
	Code       string // when not allowed
	Message    string // when not allowed: for the model
	ApprovalID string // when a person was asked
	URL        string // on approval_pending: the item's page, where the person decides
}

// Codes the client itself produces.
const (
	CodePolicyUnavailable = string(approval.CodePolicyUnavailable)
	// CodeApprovalPending: GateWithin stopped waiting before the person
	// answered. The call did not run and must not run now; tell the user
	// (Outcome.Message has the link) — making the same call again with
	// AttachToPending joins the same item and runs it once approved.
	CodeApprovalPending = string(approval.CodeApprovalPending)
)

// Error is a non-2xx answer from the server.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("countersign: %d %s: %s", e.Status, e.Code, e.Message)
}

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
	var res checkResponse
	asked := time.Now()
	if err := c.do(ctx, http.MethodPost, "/api/v1/tool-calls", call, &res); err != nil {
		return unavailable(call, ""), err
	}
	if res.CallID != call.CallID {
		return unavailable(call, ""), fmt.Errorf("countersign: answer for call %q, not %q", res.CallID, call.CallID)
	}
	switch res.Decision {
	case "allow":
		return Outcome{Allowed: true, Via: res.Via}, nil
	case "deny":
		var id string
		if res.Approval != nil {
			id = res.Approval.ID // the call sent again: its earlier item's end
		}
		return notAllowed(call, res.Code, res.Message, id)
	case "pending":
		if res.Approval == nil || res.Approval.ID == "" {
			return unavailable(call, ""), errors.New("countersign: pending answer without an approval")
		}
	default:
		return unavailable(call, ""), fmt.Errorf("countersign: unknown decision %q", res.Decision)
	}
	item, err := itemCall(call, res.Approval)
	if err != nil {
		return unavailable(call, res.Approval.ID), err
	}
	if pending != nil {
		pending(Outcome{Code: CodeApprovalPending, ApprovalID: res.Approval.ID, URL: res.Approval.URL})
	}
	st, err := c.wait(ctx, item, res.Approval, giveUpAt(asked, res.Approval), stopAt)
	if err != nil {
		return unavailable(call, res.Approval.ID), err
	}
	switch st.Status {
	case string(approval.StatusPending):
		return stillPending(call, st), nil
	case string(approval.StatusApproved):
		return c.claim(ctx, call, item, st)
	case string(approval.StatusRejected), string(approval.StatusExpired), string(approval.StatusCancelled):
		return notAllowed(call, st.Code, st.Message, st.ID)
	}
	// consumed (by someone else) or a status this client does not know.
	return unavailable(call, st.ID), fmt.Errorf("countersign: approval ended as %q", st.Status)
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
	// A check that attached to an approved item carries no scope; the
	// claim's answer does.
	scope := st.Scope
	if scope == "" {
		scope = claimed.Scope
	}
	return Outcome{Allowed: true, Via: "person", Scope: scope, ApprovalID: st.ID}, nil
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

// ConnectorTool describes one tool for SyncConnector.
type ConnectorTool struct {
	Name             string               `json:"name"`
	DisplayName      string               `json:"display_name,omitempty"`
	Description      string               `json:"description,omitempty"`
	Annotations      approval.Annotations `json:"annotations"`
	StandingApproval *bool                `json:"standing_approval,omitempty"`
	// ShellArgument names the argument that holds a shell command line,
	// so that its calls show the command parsed.
	ShellArgument string `json:"shell_argument,omitempty"`
}

// Connector is a connector's full tool list.
type Connector struct {
	DisplayName string          `json:"display_name"`
	Kind        string          `json:"kind"` // builtin or connector
	Tools       []ConnectorTool `json:"tools"`
}

// SyncConnector registers a connector and its full tool list; tools left
// out are retired. Existing tools keep their policy.
func (c *Client) SyncConnector(ctx context.Context, name string, conn Connector) error {
	return c.do(ctx, http.MethodPut, "/api/v1/connectors/"+url.PathEscape(name), conn, nil)
}

// ToolRegistration describes one tool for RegisterTool. The connector
// fields are used only when the connector does not exist yet (Kind:
// builtin or connector; default connector).
type ToolRegistration struct {
	Name                 string               `json:"-"` // the tool's name, sent in the path
	DisplayName          string               `json:"display_name,omitempty"`
	Description          string               `json:"description,omitempty"`
	Annotations          approval.Annotations `json:"annotations"`
	StandingApproval     *bool                `json:"standing_approval,omitempty"`
	ShellArgument        string               `json:"shell_argument,omitempty"` // the argument holding a shell command line
	ConnectorDisplayName string               `json:"connector_display_name,omitempty"`
	ConnectorKind        string               `json:"connector_kind,omitempty"`
}

// RegisteredTool is what RegisterTool did.
type RegisteredTool struct {
	Connector        string `json:"connector"`
	Tool             string `json:"tool"`
	Created          bool   `json:"created"`           // new: it got the default policy
	Restored         bool   `json:"restored"`          // was retired, is back with its policy
	ConnectorCreated bool   `json:"connector_created"` // the connector was created for it
	Mode             string `json:"mode"`              // its policy mode now
}

// RegisterTool registers or updates one tool of a connector without
// replacing the connector's list. A new tool gets the default policy for
// its annotations; an existing one keeps its policy whatever the
// annotations say. A connector an administrator deleted is refused (*Error
// 409 connector_deleted).
func (c *Client) RegisterTool(ctx context.Context, connector string, t ToolRegistration) (RegisteredTool, error) {
	var out RegisteredTool
	err := c.do(ctx, http.MethodPut, "/api/v1/connectors/"+url.PathEscape(connector)+"/tools/"+url.PathEscape(t.Name), t, &out)
	return out, err
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

// Do sends one API request and decodes the JSON answer into out; a non-2xx
// answer is an *Error. Gate, SyncConnector and CancelTurn are built on it.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	return c.do(ctx, method, path, body, out)
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.APIKey)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		return &Error{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("countersign: unreadable answer: %w", err)
	}
	return nil
}

// RegisterPlaybook registers or updates a playbook owned by the person
// with OIDC subject owner.
func (c *Client) RegisterPlaybook(ctx context.Context, id, owner string, def approval.Definition) error {
	return c.do(ctx, http.MethodPut, "/api/v1/playbooks/"+url.PathEscape(id), map[string]any{"owner": owner, "definition": def}, nil)
}

// Run is a started playbook run: pass ID as Call.PlaybookRunID.
type Run struct {
	ID          string          `json:"run_id"`
	Preapproved []approval.Pair `json:"preapproved"`
}

// StartRun starts an unattended run. A playbook that is disabled or whose
// tools lack their owner's approval is refused with an *Error (409).
func (c *Client) StartRun(ctx context.Context, playbookID string) (Run, error) {
	var r Run
	err := c.do(ctx, http.MethodPost, "/api/v1/playbooks/"+url.PathEscape(playbookID)+"/runs", nil, &r)
	return r, err
}
