package handlers

import (
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// activityWaiting puts on the Activity page the calls still waiting (issue
// 42), which have no outcome yet: first those the viewer may decide (the
// inbox's own rule), each linking to where it is decided; then their
// agents' calls that wait for someone else, each saying who decides (the
// card's words) and how far a quorum got. Those have no link: the request
// page is its deciders' alone.
func (h *Handler) activityWaiting(c echo.Context, user db.User, v *views.ActivityView) error {
	ctx := c.Request().Context()
	mine, err := h.DB.PendingFor(ctx, user.Subject)
	if err != nil {
		return err
	}
	others, err := h.DB.WaitingOnOthers(ctx, user)
	if err != nil {
		return err
	}
	row := func(a db.Approval, yours bool) views.WaitingRow {
		d := h.decidersOf(ctx, a, user.Subject)
		r := views.WaitingRow{ID: a.ID, ToolDisplay: a.ToolDisplay, ConnectorDisplay: connectorLabel(a.ConnectorKind, a.ConnectorDisplay),
			Agent: agentOf(a).KeyName, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, Yours: yours, Deciders: d.Words}
		if d.Quorum() {
			r.Progress = d.Progress()
		}
		return r
	}
	for _, a := range mine {
		v.Waiting = append(v.Waiting, row(a, true))
	}
	for _, a := range others {
		v.Waiting = append(v.Waiting, row(a, false))
	}
	return nil
}
