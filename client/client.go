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
	"fmt"
	"io"
	"net/http"
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
	// Proof "passkey" asks that a person's approval of this call carry their
	// passkey, whatever the tool's policy says; Gate then refuses to run an
	// approval the claim says was made without one (issue 33).
	Proof string `json:"proof,omitempty"`
	// OfferedDecisions (optional) are the decisions this runtime can carry
	// out: the card offers no other standing decision (approve and reject
	// always). Nil offers all the policy allows.
	OfferedDecisions []string `json:"offered_decisions,omitempty"`
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
	Via        string // policy, conversation_grant, always_allow, preapproval, joined (asked through another guard of the call), or person
	Scope      string // once, conversation or always, when a person approved
	Code       string // when not allowed
	Message    string // when not allowed: for the model
	ApprovalID string // when a person was asked
	URL        string // on approval_pending: the item's page, where the person decides
	Proof      string // when a person approved: "passkey" or "session"
	// PreImages, when a person approved: the SHA-256 of each file as the
	// runtime read it for the diff the person approved (the claim's
	// pre_images; empty when none, nil from a server that does not say).
	PreImages []approval.PreImage
	// Grant, when a person chose "Always allow calls like this": the
	// scoped grant as the person confirmed it — what it covers and when
	// it ends. Nil for any other answer, and from a server that does not
	// say.
	Grant *Grant
}

// Grant is a scoped standing grant as the server reports it.
type Grant struct {
	Scope     approval.GrantScope `json:"scope"`
	ExpiresAt *time.Time          `json:"expires_at"` // nil: until revoked
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

// RedirectError is a redirect answer. The client follows none: the key and
// the call go only to the address it was given, and a redirect means that
// address is not Countersign's API (or is an old one). Configure Location
// instead, once you have checked it is yours.
type RedirectError struct {
	Status   int
	Location string
}

func (e *RedirectError) Error() string {
	if e.Location == "" {
		return fmt.Sprintf("countersign: the server answered %d, a redirect, which is not followed", e.Status)
	}
	return fmt.Sprintf("countersign: the server answered %d, a redirect to %s, which is not followed: if that is your Countersign, configure its address instead", e.Status, e.Location)
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
	hc := http.Client{}
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	// No redirect is followed, whatever the given http.Client does: it
	// would send the key (same host) or the call (any host) elsewhere, and
	// obey that place's answer.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		return &RedirectError{Status: resp.StatusCode, Location: resp.Header.Get("Location")}
	}
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
