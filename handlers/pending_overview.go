package handlers

import (
	"net/http"

	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// PendingOverview is the admins' read-only overview of every pending call:
// who asked, who may decide (by the one rule, as names), how long it
// waits. It links to a call's page only where a rule names the admin.
func (h *Handler) PendingOverview(c echo.Context) error {
	ctx := c.Request().Context()
	u := CurrentUser(c)
	all, err := h.DB.PendingOverview(ctx)
	if err != nil {
		return err
	}
	mine, err := h.DB.PendingFor(ctx, u.Subject)
	if err != nil {
		return err
	}
	yours := make(map[string]bool, len(mine))
	for _, a := range mine {
		yours[a.ID] = true
	}
	v := views.PendingOverviewView{Page: h.Page(c, "Pending calls", "pending"), Now: h.Now()}
	for _, a := range all {
		d := h.decidersOf(ctx, a, "")
		owner := a.OwnerSubject
		if owner == "" {
			owner = "team " + a.OwnerTeam
		} else if p, err := h.DB.PersonName(ctx, owner); err == nil {
			owner = p
		}
		row := views.PendingOverviewRow{ID: a.ID, ToolDisplay: a.ToolDisplay, ConnectorDisplay: connectorLabel(a.ConnectorKind, a.ConnectorDisplay),
			AskedBy: a.APIKeyName + " for " + owner, Deciders: d.Words, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, Yours: yours[a.ID]}
		if d.Quorum() {
			row.Progress = d.Progress()
		}
		if row.MayDecide, err = h.DB.DeciderNamesOf(ctx, a.ID); err != nil {
			return err
		}
		v.Rows = append(v.Rows, row)
	}
	return Render(c, http.StatusOK, views.PendingOverview(v))
}
