package handlers

import (
	"net/http"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// PolicyList shows every tool's policy, grouped by connector: builtin tools
// as "System tools", deleted connectors last.
func (h *Handler) PolicyList(c echo.Context) error {
	rows, err := h.DB.ListPolicies(c.Request().Context())
	if err != nil {
		return err
	}
	v := views.PoliciesView{Page: h.Page(c, "Policies", "policies")}
	var key string
	for _, r := range rows {
		k := r.Connector
		if k != key {
			g := views.PolicyGroup{Title: connectorLabel(r.ConnectorKind, r.ConnectorDisplay), Deleted: r.ConnectorDeleted}
			// The connector's own name is shown only when it says more
			// than its display name ("Calendar", not "Calendar (calendar)").
			if r.ConnectorKind != "builtin" && !strings.EqualFold(r.ConnectorDisplay, r.Connector) {
				g.Name = r.Connector
			}
			v.Groups = append(v.Groups, g)
			key = k
		}
		g := &v.Groups[len(v.Groups)-1]
		g.Tools = append(g.Tools, policyItem(r.Tool, r.AnnotationsChangedAt != nil))
	}
	return Render(c, http.StatusOK, views.Policies(v))
}

func policyItem(t db.Tool, changed bool) views.PolicyItem {
	return views.PolicyItem{ID: t.ID, Name: t.Name, Display: t.DisplayName, Annotations: t.Annotations(),
		Mode: approval.Mode(t.Mode), Standing: t.StandingApproval, Condition: t.Condition, Version: t.PolicyVersion,
		AnnotationsChanged: changed, Description: t.Description,
		// The same words the cards use (card_deciders.go), from the rule.
		Deciders: policyDecidersWords(t), Passkey: t.Proof == string(approval.ProofPasskey), ProofCondition: t.ProofCondition}
}

// policyDecidersWords says who decides the tool's calls, with the rule's
// condition when one chooses it.
func policyDecidersWords(t db.Tool) string {
	w := t.Rule().CallWords("")
	if t.DecidersCondition != "" {
		w += " (when " + t.DecidersCondition + ")"
	}
	return w
}
