package handlers

import (
	"net/http"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// ApprovalShow is one request's own page, the address every notification
// links to. Its owner sees the inbox's card while it waits and can decide
// there; once settled, the outcome, who decided and when. Anyone else gets
// 404, exactly as for a decision, and the attempt is logged.
func (h *Handler) ApprovalShow(c echo.Context) error {
	u := CurrentUser(c)
	id, err := approvalIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	a, err := h.DB.ApprovalForViewer(ctx, id, u.Subject)
	if err != nil {
		if approval.KindOf(err) == approval.KindNotFound {
			// 404, not 403: don't confirm that someone else's item exists.
			h.Log.WarnContext(ctx, "request page refused: not the owner, or no such item",
				"user_id", u.ID, "subject", u.Subject, "approval_id", id, "ip", c.RealIP())
		}
		return err
	}
	v := views.ApprovalPageView{Page: h.Page(c, "Request", "inbox"), ID: a.ID, Card: h.card(c, a),
		Status: a.Status, DecidedAt: a.DecidedAt, ConsumedAt: a.ConsumedAt, Reason: a.RejectReason, Note: a.ReviewerNote}
	// A pending item past its expiry is expired, swept or not: it can no
	// longer be decided.
	v.Pending = a.Status == approval.StatusPending && a.ExpiresIn > 0
	if a.Status == approval.StatusPending && !v.Pending {
		v.Status = approval.StatusExpired
	}
	if a.Scope != nil {
		v.Scope = approval.Scope(*a.Scope)
	}
	if a.Status == approval.StatusCancelled {
		v.Code = a.Code()
	}
	switch {
	case a.Rule().Needed() > 1 && (a.Status == approval.StatusApproved || a.Status == approval.StatusConsumed):
		// A quorum's approval is every vote that counted, not the last.
		names, err := h.DB.DecidedBy(ctx, a)
		if err != nil {
			return err
		}
		v.DecidedBy = strings.Join(names, ", ")
	case a.ReviewerID != nil:
		reviewer, err := h.DB.UserByID(ctx, *a.ReviewerID)
		if err != nil {
			return err
		}
		v.DecidedBy = reviewer.DisplayName()
	}
	return Render(c, http.StatusOK, views.ApprovalPage(v))
}
