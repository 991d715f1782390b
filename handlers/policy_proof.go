package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// PolicyProofEdit shows a tool's step-up setting: "Requires a passkey to
// approve" and its optional condition.
func (h *Handler) PolicyProofEdit(c echo.Context) error {
	t, err := h.toolParam(c)
	if err != nil {
		return err
	}
	f := h.proofForm(c, t)
	f.Passkey, f.Condition = t.Proof == string(approval.ProofPasskey), t.ProofCondition
	return Render(c, http.StatusOK, views.PolicyProof(f))
}

func (h *Handler) proofForm(c echo.Context, t db.Tool) views.PolicyProofForm {
	return views.PolicyProofForm{Page: h.Page(c, t.DisplayName+" · Passkey", "policies"), ToolID: t.ID, ToolDisplay: t.DisplayName,
		Connector: connectorLabel(t.ConnectorKind, t.ConnectorDisplay), ToolName: t.Name, Version: t.PolicyVersion}
}

// PolicyProofUpdate saves a tool's step-up setting from the POST body's
// proof ("passkey" or absent), proof_condition and version. A condition
// that does not compile re-renders the form (422). Saving is a policy
// change: audited, and the version goes up.
func (h *Handler) PolicyProofUpdate(c echo.Context) error {
	t, err := h.toolParam(c)
	if err != nil {
		return err
	}
	req := c.Request()
	f := h.proofForm(c, t)
	f.Passkey = req.PostFormValue("proof") == string(approval.ProofPasskey)
	f.Condition = strings.TrimSpace(req.PostFormValue("proof_condition"))
	version, _ := strconv.Atoi(req.PostFormValue("version"))
	if f.Condition != "" && f.Passkey {
		if err := approval.CompileCondition(f.Condition); err != nil {
			f.Error = "This condition does not compile: " + err.Error()
			return Render(c, http.StatusUnprocessableEntity, views.PolicyProof(f))
		}
	}
	proof := approval.ProofNone
	if f.Passkey {
		proof = approval.ProofPasskey
	}
	out, err := h.DB.SetToolProof(req.Context(), CurrentUser(c).Actor(), t.ID, version, proof, f.Condition)
	if err != nil {
		return err
	}
	msg := "Saved: approving " + views.Marked(out.DisplayName) + " needs no passkey."
	if f.Passkey {
		msg = "Saved: approving " + views.Marked(out.DisplayName) + " needs a passkey"
		if f.Condition != "" {
			msg += " when " + views.Marked(f.Condition)
		}
		msg += ". Standing approval is not offered for it."
	}
	h.flash(c, msg, false)
	return redirect(c, "/admin/policies/"+strconv.FormatInt(t.ID, 10))
}
