package handlers

import (
	"net/http"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
)

// toolPutBody registers one tool. The connector fields are used only when
// the connector does not exist yet.
type toolPutBody struct {
	DisplayName          string               `json:"display_name"`
	Description          string               `json:"description"`
	Annotations          approval.Annotations `json:"annotations"`
	StandingApproval     *bool                `json:"standing_approval"`
	ShellArgument        string               `json:"shell_argument"`
	ConnectorDisplayName string               `json:"connector_display_name"`
	ConnectorKind        string               `json:"connector_kind"`
}

type toolPutResponse struct {
	Connector        string `json:"connector"`
	Tool             string `json:"tool"`
	Created          bool   `json:"created"`
	Restored         bool   `json:"restored"`
	ConnectorCreated bool   `json:"connector_created"`
	Mode             string `json:"mode"`
}

// APIToolPut registers or updates one tool without replacing its
// connector's list — for runtimes that meet tools one at a time (an agent's
// hook). Policy rules are the full sync's (db.RegisterTool).
func (h *Handler) APIToolPut(c echo.Context) error {
	connector, err := pathParam(c, "connector")
	if err != nil {
		return err
	}
	tool, err := pathParam(c, "tool")
	if err != nil {
		return err
	}
	if err := approval.CheckFields(
		approval.Field{Name: "connector", Value: connector, Rule: approval.RuleName, Required: true},
		approval.Field{Name: "tool", Value: tool, Rule: approval.RuleToolName, Required: true},
	); err != nil {
		return err
	}
	var b toolPutBody
	if err := decodeJSON(c, &b); err != nil {
		return err
	}
	if err := approval.CheckFields(
		approval.Field{Name: "display_name", Value: b.DisplayName, Rule: approval.RuleDisplayName},
		approval.Field{Name: "description", Value: b.Description, Rule: approval.RuleDescription},
		approval.Field{Name: "shell_argument", Value: b.ShellArgument, Rule: approval.RuleDisplayName},
		approval.Field{Name: "connector_display_name", Value: b.ConnectorDisplayName, Rule: approval.RuleDisplayName},
	); err != nil {
		return err
	}
	switch b.ConnectorKind {
	case "":
		b.ConnectorKind = "connector"
	case "builtin", "connector":
	default:
		return invalid(`The field connector_kind must be "builtin" or "connector".`)
	}
	if b.DisplayName == "" {
		b.DisplayName = tool
	}
	if b.ConnectorDisplayName == "" {
		b.ConnectorDisplayName = connector
	}
	res, err := h.DB.RegisterTool(c.Request().Context(), CurrentAPIKey(c).Actor(), db.ToolRegistration{
		Connector: connector, ConnectorDisplayName: b.ConnectorDisplayName, ConnectorKind: b.ConnectorKind,
		Tool: db.ToolSync{Name: tool, DisplayName: b.DisplayName, Description: b.Description,
			Annotations: b.Annotations, StandingApproval: b.StandingApproval, ShellArgument: b.ShellArgument},
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toolPutResponse{Connector: connector, Tool: tool, Created: res.Created,
		Restored: res.Restored, ConnectorCreated: res.ConnectorCreated, Mode: res.Tool.Mode})
}
