package handlers

import (
	"net/http"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// PolicyEdit shows the edit form of one tool's policy.
func (h *Handler) PolicyEdit(c echo.Context) error {
	t, err := h.toolParam(c)
	if err != nil {
		return err
	}
	f, err := h.policyForm(c, t)
	if err != nil {
		return err
	}
	f.Mode, f.Standing, f.Condition, f.Version = approval.Mode(t.Mode), t.StandingApproval, t.Condition, t.PolicyVersion
	f.MaxGrant, f.Matchable = t.MaxGrant(), t.Matchable
	f.Proof = t.Proof // passkey step-up (issue 33)
	if f.Deciders, err = h.decidersOfTool(c.Request().Context(), t); err != nil {
		return err
	}
	f.Escalation.Team, f.Escalation.After = escalationInput(t.Escalation())
	impact, err := h.DB.PolicyImpact(c.Request().Context(), t.ID)
	if err != nil {
		return err
	}
	f.LiveGrants = impact.Total()
	return Render(c, http.StatusOK, views.PolicyEdit(f))
}

func (h *Handler) toolParam(c echo.Context) (db.Tool, error) {
	id, err := numberParam(c, "id")
	if err != nil {
		return db.Tool{}, echo.ErrNotFound
	}
	return h.DB.ToolByID(c.Request().Context(), id)
}

func (h *Handler) policyForm(c echo.Context, t db.Tool) (views.PolicyForm, error) {
	f := views.PolicyForm{Page: h.Page(c, t.DisplayName+" · Policies", "policies"), Tool: policyItem(t, false),
		Connector: connectorLabel(t.ConnectorKind, t.ConnectorDisplay)}
	keys, err := h.DB.ToolArgumentKeys(c.Request().Context(), t.ID)
	if err != nil {
		return f, err
	}
	f.Arguments, f.Examples = conditionHelp(keys)
	grants, err := h.DB.ScopedGrantsForTool(c.Request().Context(), t.ID)
	if err != nil {
		return f, err
	}
	for _, g := range grants {
		f.ScopedGrants = append(f.ScopedGrants, views.ScopedGrantRow{ID: g.ID, User: g.UserName, Scope: g.Covering(),
			GrantedAt: g.CreatedAt, EndsAt: g.ExpiresAt, LastUsedAt: g.LastUsedAt})
	}
	f.Now = h.Now()
	f.Escalation.Teams, err = h.DB.BackupTeamChoices(c.Request().Context())
	return f, err
}
