package handlers

import (
	"net/http"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
)

type checkBody struct {
	CallID         string `json:"call_id"`
	User           string `json:"user"`
	ConversationID string `json:"conversation_id"`
	// ConversationTitle is the runtime's label for the conversation
	// (optional), shown to the reviewer in place of the id.
	ConversationTitle string `json:"conversation_title"`
	TurnID            string `json:"turn_id"`
	Connector         string `json:"connector"`
	Tool              string `json:"tool"`
	Arguments         string `json:"arguments"`
	Reason            string `json:"reason"`
	PlaybookRunID     string `json:"playbook_run_id"`
	// AttachToPending: when the call would ask a person, join the item an
	// earlier identical call opened instead (see db.findAttachable for why
	// it is opt-in).
	AttachToPending bool `json:"attach_to_pending"`
	// Runtime is what the runtime says about itself, and Context what it
	// computed for the reviewer (a diff): untrusted text shown on the card,
	// never part of the digest.
	Runtime *approval.Runtime `json:"runtime"`
	Context *callContext      `json:"context"`
	// Proof: "passkey" asks that a person's approval of this call carry a
	// passkey, whatever the tool's policy says (issue 33).
	Proof string `json:"proof"`
	// OfferedDecisions (optional) narrows the card's standing decisions to
	// those the runtime can carry out (approval/offered.go).
	OfferedDecisions []string `json:"offered_decisions"`
}

// callContext is the check's "context" object.
type callContext struct {
	Diff string `json:"diff"`
}

type pendingJSON struct {
	ID                 string    `json:"id"`
	CallID             string    `json:"call_id"` // the item's call: another call's when attached
	Status             string    `json:"status"`
	URL                string    `json:"url,omitempty"`
	ExpiresAt          time.Time `json:"expires_at"`
	ExpiresInMS        int64     `json:"expires_in_ms"` // time left by the database's clock
	ArgumentsDigest    string    `json:"arguments_digest"`
	AvailableDecisions []string  `json:"available_decisions"`
}

type checkResponse struct {
	CallID   string       `json:"call_id"`
	Decision string       `json:"decision"`
	Code     string       `json:"code,omitempty"`
	Message  string       `json:"message,omitempty"`
	Via      string       `json:"via,omitempty"`
	Approval *pendingJSON `json:"approval,omitempty"`
}

// APIToolCallCheck is the check: allow, deny or pending.
func (h *Handler) APIToolCallCheck(c echo.Context) error {
	raw, _ := c.Get(CtxBearerKey).(string)
	var b checkBody
	// The arguments are the model's text, judged as sent: text that is not
	// JSON (a NUL byte included) makes the call ask a person.
	err := decodeJSON(c, &b, "/arguments")
	if err == nil {
		err = checkCallFields(b)
	}
	if err != nil {
		// A request that is not a check is refused as one without a key
		// when its key is not valid either: nothing is said about the body.
		if _, aerr := h.DB.AuthenticateAPIKey(c.Request().Context(), raw); aerr != nil {
			return aerr
		}
		return err
	}
	if b.PlaybookRunID != "" {
		b.PlaybookRunID = approval.NormalizeRunID(b.PlaybookRunID)
	}
	var rt approval.Runtime
	if b.Runtime != nil {
		rt = *b.Runtime
	}
	var diff string
	if b.Context != nil {
		diff = b.Context.Diff
	}
	res, _, err := h.DB.CheckWithAPIKey(c.Request().Context(), raw, db.CheckRequest{
		CallID: b.CallID, User: b.User, ConversationID: b.ConversationID, ConversationTitle: b.ConversationTitle, TurnID: b.TurnID,
		Connector: b.Connector, Tool: b.Tool, Arguments: b.Arguments, Reason: b.Reason, PlaybookRunID: b.PlaybookRunID,
		AttachToPending: b.AttachToPending, Runtime: rt, Diff: diff, Proof: approval.Proof(b.Proof),
		OfferedDecisions: b.OfferedDecisions,
	}, db.CheckOptions{Timeout: h.Settings.ApprovalTimeout, DeniedThreshold: h.Settings.DeniedBlockThreshold, Condition: h.Condition})
	if err != nil {
		return err
	}
	out := checkResponse{CallID: b.CallID, Decision: string(res.Outcome.Verdict)}
	switch res.Outcome.Verdict {
	case approval.Allow:
		out.Via = string(res.Outcome.Via)
	case approval.Deny:
		out.Code, out.Message = string(res.Outcome.Code), res.Message
	}
	// A pending answer names its item; so does a deny that is the end of
	// this very call's earlier item (the call sent again).
	if a := res.Approval; a != nil && res.Outcome.Verdict != approval.Allow {
		out.Approval = &pendingJSON{ID: a.ID, CallID: a.CallID, Status: string(a.Status), URL: h.approvalURL(a.ID), ExpiresAt: a.ExpiresAt.UTC(), ExpiresInMS: a.ExpiresIn.Milliseconds(),
			ArgumentsDigest: a.ArgumentsDigest, AvailableDecisions: a.AvailableDecisions}
	}
	return c.JSON(http.StatusOK, out)
}

// checkCallFields bounds every text of a check; the arguments have their
// own limits (approval.ParseArguments).
func checkCallFields(b checkBody) error {
	if b.Runtime != nil {
		if err := approval.CheckRuntime(*b.Runtime); err != nil {
			return err
		}
	}
	if b.Context != nil {
		if err := approval.CheckContextDiff(b.Context.Diff); err != nil {
			return err
		}
	}
	if err := approval.CheckOffered(b.OfferedDecisions); err != nil {
		return err
	}
	if _, ok := approval.ParseProof(b.Proof); !ok {
		return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "proof must be \"passkey\" or \"none\", or be left out.")
	}
	return approval.CheckFields(
		approval.Field{Name: "call_id", Value: b.CallID, Rule: approval.RuleID, Required: true},
		// user may be omitted by a team's key only; the check says so once
		// the key is known (db.errUserRequired).
		approval.Field{Name: "user", Value: b.User, Rule: approval.RuleID},
		approval.Field{Name: "conversation_id", Value: b.ConversationID, Rule: approval.RuleID, Required: true},
		approval.Field{Name: "conversation_title", Value: b.ConversationTitle, Rule: approval.RuleDisplayName},
		approval.Field{Name: "turn_id", Value: b.TurnID, Rule: approval.RuleID, Required: true},
		approval.Field{Name: "connector", Value: b.Connector, Rule: approval.RuleName, Required: true},
		approval.Field{Name: "tool", Value: b.Tool, Rule: approval.RuleToolName, Required: true},
		approval.Field{Name: "reason", Value: b.Reason, Rule: approval.RuleReason},
		approval.Field{Name: "playbook_run_id", Value: b.PlaybookRunID, Rule: approval.RuleRunID},
	)
}
