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
	TurnID         string `json:"turn_id"`
	Connector      string `json:"connector"`
	Tool           string `json:"tool"`
	Arguments      string `json:"arguments"`
	Reason         string `json:"reason"`
	PlaybookRunID  string `json:"playbook_run_id"`
}

type pendingJSON struct {
	ID                 string    `json:"id"`
	Status             string    `json:"status"`
	ExpiresAt          time.Time `json:"expires_at"`
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
	var b checkBody
	if err := decodeJSON(c, &b); err != nil {
		return err
	}
	if err := required([2]string{"call_id", b.CallID}, [2]string{"user", b.User}, [2]string{"conversation_id", b.ConversationID},
		[2]string{"turn_id", b.TurnID}, [2]string{"connector", b.Connector}, [2]string{"tool", b.Tool}); err != nil {
		return err
	}
	if len(b.Reason) > 2000 {
		return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "The field reason is too long (2000 bytes at most).")
	}
	res, err := h.DB.Check(c.Request().Context(), *CurrentAPIKey(c), db.CheckRequest{
		CallID: b.CallID, User: b.User, ConversationID: b.ConversationID, TurnID: b.TurnID,
		Connector: b.Connector, Tool: b.Tool, Arguments: b.Arguments, Reason: b.Reason, PlaybookRunID: b.PlaybookRunID,
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
	case approval.Pending:
		a := res.Approval
		out.Approval = &pendingJSON{ID: a.ID, Status: string(a.Status), ExpiresAt: a.ExpiresAt.UTC(),
			ArgumentsDigest: a.ArgumentsDigest, AvailableDecisions: a.AvailableDecisions}
	}
	return c.JSON(http.StatusOK, out)
}
