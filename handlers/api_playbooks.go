package handlers

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
)

type playbookBody struct {
	Owner      string              `json:"owner"`
	Definition approval.Definition `json:"definition"`
}

// APIPlaybookPut registers or updates a playbook.
func (h *Handler) APIPlaybookPut(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	if err := approval.CheckFields(approval.Field{Name: "playbook id", Value: id, Rule: approval.RuleName, Required: true}); err != nil {
		return err
	}
	var b playbookBody
	if err := decodeJSON(c, &b); err != nil {
		return err
	}
	if err := required([2]string{"owner", b.Owner}); err != nil {
		return err
	}
	if err := b.Definition.CheckLimits(); err != nil {
		return err
	}
	p, err := h.DB.UpsertPlaybook(c.Request().Context(), CurrentAPIKey(c).Actor(), id, b.Owner, b.Definition)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"id": p.ID, "fingerprint": p.Fingerprint, "enabled": p.Enabled})
}

// approvalRequired answers a refused enable or run: 409 with the code and
// each pair with why it needs the owner's approval; runID names the
// recorded refused run, when there is one.
func approvalRequired(c echo.Context, err error, runID string) (bool, error) {
	var are *db.ApprovalRequiredError
	if !errors.As(err, &are) {
		return false, err
	}
	pairs := make([]map[string]any, 0, len(are.Pairs))
	for _, p := range are.Pairs {
		reason := p.LapseReason
		if reason == "" {
			reason = "Not approved yet"
		}
		pairs = append(pairs, map[string]any{"connector": p.Connector, "tool": p.Tool, "reason": reason, "steps": p.Steps})
	}
	body := map[string]any{
		"code":    string(approval.CodePlaybookApproval),
		"message": "The playbook " + are.Playbook + " uses tools that need its owner's approval before it can be enabled, scheduled or run. The owner approves them on the playbook's page.",
		"pairs":   pairs,
	}
	if runID != "" {
		body["run_id"] = runID
	}
	return true, c.JSON(http.StatusConflict, map[string]any{"error": body})
}

// APIPlaybookEnable enables a playbook, or refuses with
// PLAYBOOK_TOOL_APPROVAL_REQUIRED and the pairs.
func (h *Handler) APIPlaybookEnable(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	p, err := h.DB.SetPlaybookState(c.Request().Context(), CurrentAPIKey(c).Actor(), "", id, true, nil)
	if handled, err := approvalRequired(c, err, ""); handled || err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"id": p.ID, "enabled": true})
}

// APIPlaybookRun starts a run and lays out its pre-approved pairs. A
// refused start is answered 409 with its code and the run_id under which
// the refusal was recorded (that run runs nothing).
func (h *Handler) APIPlaybookRun(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	if err := decodeEmptyBody(c); err != nil {
		return err
	}
	run, err := h.DB.StartRun(c.Request().Context(), *CurrentAPIKey(c), id)
	var refused *db.RunRefusedError
	if !errors.As(err, &refused) {
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]any{"run_id": run.ID, "preapproved": run.Preapproved})
	}
	if handled, err := approvalRequired(c, refused.Err, refused.RunID); handled {
		return err
	}
	e := approval.AsError(refused.Err)
	if e == nil {
		return refused.Err
	}
	return c.JSON(http.StatusConflict, map[string]any{"error": map[string]any{"code": e.Code, "message": e.Message, "run_id": refused.RunID}})
}

// decodeEmptyBody accepts no body or an empty JSON object, and refuses
// anything else as every other endpoint does: a field the server ignores
// would let a client believe it asked for something it did not get.
func decodeEmptyBody(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	c.Request().Body = io.NopCloser(bytes.NewReader(body))
	return decodeJSON(c, &struct{}{})
}
