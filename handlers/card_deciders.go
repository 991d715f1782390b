package handlers

import (
	"context"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
)

// decidersOf says, for viewer, who may decide item a and how far a quorum
// got: the approvals so far are read for quorum items only.
func (h *Handler) decidersOf(ctx context.Context, a db.Approval, viewer string) views.DecidersView {
	rule := a.Rule()
	v := views.DecidersView{Needed: rule.Needed(), In: a.ApprovalsIn}
	if !rule.IsOwner() || a.OwnerTeam != "" {
		v.Words = rule.Words("the agent's owner", a.OwnerTeam)
	}
	switch {
	case a.OwnerSubject == viewer:
	case !rule.IsOwner():
		v.TeamCall = rule.Team
	default:
		v.TeamCall = a.OwnerTeam
	}
	if v.Quorum() {
		votes, err := h.DB.VotesOn(ctx, []string{a.ID})
		if err != nil {
			// The line shows the count alone; the decision is checked
			// again when it is posted.
			h.Log.WarnContext(ctx, "read quorum votes", "err", err, "approval_id", a.ID)
			return v
		}
		for _, vt := range votes[a.ID] {
			if vt.Decision != "approve" {
				continue
			}
			v.Approvers = append(v.Approvers, vt.Name)
			if vt.Subject == viewer {
				v.YouApproved = true
			}
		}
	}
	return v
}
