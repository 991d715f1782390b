package handlers

import (
	"net/http"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// ApprovalDecide records the signed-in reviewer's answer. Only the form
// fields decision and reason are read (plus the CSRF token, checked by
// middleware): the reviewer comes from the session, and the call itself —
// tool, arguments, state — is what the server stored, never what the
// browser sends.
func (h *Handler) ApprovalDecide(c echo.Context) error {
	u := CurrentUser(c)
	id := c.Param("id")
	dec := approval.Decision(c.FormValue("decision"))
	a, err := h.DB.Decide(c.Request().Context(), id, *u, dec, c.FormValue("reason"))
	if err != nil {
		if approval.KindOf(err) == approval.KindNotFound {
			// 404, not 403: don't confirm that someone else's item exists.
			h.Log.WarnContext(c.Request().Context(), "decision refused: not the owner, or no such item",
				"user_id", u.ID, "subject", u.Subject, "approval_id", id, "ip", c.RealIP())
		}
		return err
	}
	row := h.decidedRow(a)
	if isHTMX(c) {
		return Render(c, http.StatusOK, views.Decided(row))
	}
	label, _ := row.Outcome()
	h.flash(c, label+": "+a.ToolDisplay+". The agent has its answer.", false)
	return redirect(c, "/")
}
