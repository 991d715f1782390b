package handlers

import (
	"net/http"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// AutoApproveList shows the signed-in user's own standing grants: "Always
// allow" by connector (builtin tools as "System tools", deleted connectors
// in their own group), then conversation grants by conversation.
func (h *Handler) AutoApproveList(c echo.Context) error {
	grants, err := h.DB.GrantsFor(c.Request().Context(), CurrentUser(c).Subject)
	if err != nil {
		return err
	}
	v := views.AutoApproveView{Page: h.Page(c, "Auto-approve", "auto-approve"), Now: h.Now()}
	always := map[string]int{}
	convs := map[string]int{}
	var deleted []views.GrantRow
	for _, g := range grants {
		row := grantRow(g)
		if row.Lapsed != "" {
			v.AnyLapsed = true
		}
		switch {
		case !g.Always():
			i, ok := convs[row.Conversation]
			if !ok {
				i = len(v.Conversations)
				convs[row.Conversation] = i
				title := row.Conversation
				if g.ConversationTitle != "" {
					title = g.ConversationTitle
				}
				v.Conversations = append(v.Conversations, views.GrantGroup{Title: "Conversation " + title})
			}
			row.Tool += " · " + connectorLabel(g.ConnectorKind, g.ConnectorDisplay)
			v.Conversations[i].Grants = append(v.Conversations[i].Grants, row)
		case g.ConnectorDeleted:
			row.Tool += " · " + g.ConnectorDisplay
			deleted = append(deleted, row)
		default:
			i, ok := always[g.Connector]
			if !ok {
				i = len(v.Always)
				always[g.Connector] = i
				v.Always = append(v.Always, views.GrantGroup{Title: connectorLabel(g.ConnectorKind, g.ConnectorDisplay), Connector: g.Connector})
			}
			v.Always[i].Grants = append(v.Always[i].Grants, row)
		}
	}
	if len(deleted) > 0 {
		v.Always = append(v.Always, views.GrantGroup{Title: "Deleted connectors", Grants: deleted})
	}
	return Render(c, http.StatusOK, views.AutoApprove(v))
}

func grantRow(g db.StandingGrant) views.GrantRow {
	r := views.GrantRow{ID: g.ID, Tool: g.ToolDisplay, Always: g.Always(), GrantedAt: g.CreatedAt, LastUsedAt: g.LastUsedAt,
		EndsAt: g.ExpiresAt, Lapsed: g.Lapsed(), Scope: g.Covering()}
	if g.ApprovalTurn != nil {
		r.FromTurn = *g.ApprovalTurn
	}
	if g.ConversationID != nil {
		r.Conversation = *g.ConversationID
	}
	return r
}
