package handlers

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
)

// decidersOf says, for viewer, who may decide item a and how far a quorum
// got: the approvals so far are read for quorum items only.
func (h *Handler) decidersOf(ctx context.Context, a db.Approval, viewer string) views.DecidersView {
	rule := a.Rule()
	// One wording, from the same rule as who sees the call (issue 42): a
	// team's key names its team, never "the agent's owner".
	v := views.DecidersView{Needed: rule.Needed(), In: a.ApprovalsIn, ItemID: a.ID, Words: rule.CallWords(a.OwnerTeam),
		OwnerDecides: rule.IsOwner() && a.OwnerTeam == ""}
	v.OwnCall = v.OwnerDecides && a.OwnerSubject == viewer
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
			if vt.Subject == viewer {
				v.YouApproved = true
			}
			if vt.Counts {
				// Named as counted, like the count beside the names.
				v.Approvers = append(v.Approvers, vt.Name)
			}
		}
	}
	return v
}

// sendProgress sends "progress" for each quorum card the page already shows
// whose approvals changed (someone else approved), and notes the counts of
// the cards it shows now.
func (h *Handler) sendProgress(c echo.Context, pending []db.Approval, shown map[string]bool, seen map[string]int) error {
	u := CurrentUser(c)
	for _, a := range pending {
		prev, ok := seen[a.ID]
		seen[a.ID] = a.ApprovalsIn
		if !ok || !shown[a.ID] || prev == a.ApprovalsIn || u == nil {
			continue
		}
		html, err := renderString(c, views.StreamProgress(h.decidersOf(c.Request().Context(), a, u.Subject)))
		if err != nil {
			return err
		}
		if err := writeEvent(c.Response(), "progress", html); err != nil {
			return err
		}
	}
	return nil
}
