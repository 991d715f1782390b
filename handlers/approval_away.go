package handlers

import (
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// awayNote fills what card says about escalation and delegation: the team
// the call was escalated to and after how long, and the person the viewer
// decides it for as their delegate — who then gets only "Approve" and
// "Reject" (a delegate never gives standing consent in another's name).
func (h *Handler) awayNote(c echo.Context, a db.Approval, card *views.ApprovalCard) {
	if a.EscalatedAt != nil && a.EscalateTo != "" && a.EscalateAfterSeconds != nil {
		card.Away.EscalatedTo = a.EscalateTo
		card.Away.EscalatedAfter = approval.DelayWords(time.Duration(*a.EscalateAfterSeconds) * time.Second)
	}
	u := CurrentUser(c)
	if u != nil && a.OwnerSubject == u.Subject {
		return // one's own call: decided in one's own right, or not at all
	}
	// Anyone but the owner decides this call only: standing consent is the
	// owner's alone (a backup team's member, a delegate, a team's member).
	var name string
	if u != nil {
		names, err := h.DB.DecidingFor(c.Request().Context(), []string{a.ID}, u.Subject)
		if err != nil {
			h.Log.Warn("deciding for", "err", err)
		}
		name = names[a.ID]
	}
	{
		card.Away.DecidingFor = name
		kept := card.Decisions[:0:0]
		for _, d := range card.Decisions {
			if d == approval.Approve || d == approval.Reject {
				kept = append(kept, d)
			}
		}
		card.Decisions = kept
	}
}
