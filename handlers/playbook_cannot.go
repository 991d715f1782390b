package handlers

import (
	"context"

	"github.com/countersign/countersign/approval"
)

// cannotPreapprove says why a playbook cannot pre-approve the tool, before
// anyone presses the button (issue 42): the same two refusals PreApprove
// makes — a rule that names others (a team, a quorum), and a passkey step
// on each call. "" when it can be pre-approved.
func (h *Handler) cannotPreapprove(ctx context.Context, toolID int64) (string, error) {
	t, err := h.DB.ToolByID(ctx, toolID)
	if err != nil {
		return "", err
	}
	if r := t.Rule(); !r.IsOwner() {
		words := "its calls are decided by " + r.CallWords("")
		if t.DecidersCondition != "" {
			words += " (when " + t.DecidersCondition + ")"
		}
		return words + ", not by the playbook’s owner alone.", nil
	}
	if t.Proof == string(approval.ProofPasskey) {
		return "each call needs a passkey to approve, and a passkey signs one call’s arguments, which an unattended run has not produced yet.", nil
	}
	return "", nil
}
