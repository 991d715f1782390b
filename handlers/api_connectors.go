package handlers

import (
	"net/http"
	"strconv"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
)

type connectorBody struct {
	DisplayName string     `json:"display_name"`
	Kind        string     `json:"kind"`
	Tools       []toolBody `json:"tools"`
}

type toolBody struct {
	Name             string               `json:"name"`
	DisplayName      string               `json:"display_name"`
	Description      string               `json:"description"`
	Annotations      approval.Annotations `json:"annotations"`
	StandingApproval *bool                `json:"standing_approval"`
	ShellArgument    string               `json:"shell_argument"`
}

// APIConnectorPut upserts a connector and its full tool list.
func (h *Handler) APIConnectorPut(c echo.Context) error {
	name, err := pathParam(c, "connector")
	if err != nil {
		return err
	}
	if err := approval.CheckFields(approval.Field{Name: "connector", Value: name, Rule: approval.RuleName, Required: true}); err != nil {
		return err
	}
	var body connectorBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if err := checkConnectorFields(body); err != nil {
		return err
	}
	if body.Kind != "builtin" && body.Kind != "connector" {
		return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, `The field kind must be "builtin" or "connector".`)
	}
	if body.DisplayName == "" {
		body.DisplayName = name
	}
	sync := db.ConnectorSync{Name: name, DisplayName: body.DisplayName, Kind: body.Kind}
	seen := map[string]bool{}
	for _, t := range body.Tools {
		if seen[t.Name] {
			return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "The tool %q is listed twice.", t.Name)
		}
		seen[t.Name] = true
		if t.DisplayName == "" {
			t.DisplayName = t.Name
		}
		sync.Tools = append(sync.Tools, db.ToolSync{Name: t.Name, DisplayName: t.DisplayName, Description: t.Description,
			Annotations: t.Annotations, StandingApproval: t.StandingApproval, ShellArgument: t.ShellArgument})
	}
	if err := h.DB.SyncConnector(c.Request().Context(), CurrentAPIKey(c).Actor(), sync); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"connector": name, "tools": len(sync.Tools)})
}

// checkConnectorFields bounds the names and texts of a catalog sync; the
// 400 names the first bad field (tools[2].description).
func checkConnectorFields(b connectorBody) error {
	fields := []approval.Field{{Name: "display_name", Value: b.DisplayName, Rule: approval.RuleDisplayName}}
	for i, t := range b.Tools {
		at := "tools[" + strconv.Itoa(i) + "]."
		fields = append(fields,
			approval.Field{Name: at + "name", Value: t.Name, Rule: approval.RuleToolName, Required: true},
			approval.Field{Name: at + "display_name", Value: t.DisplayName, Rule: approval.RuleDisplayName},
			approval.Field{Name: at + "description", Value: t.Description, Rule: approval.RuleDescription},
			approval.Field{Name: at + "shell_argument", Value: t.ShellArgument, Rule: approval.RuleDisplayName})
	}
	return approval.CheckFields(fields...)
}

// APIConnectorDelete marks a connector deleted.
func (h *Handler) APIConnectorDelete(c echo.Context) error {
	name, err := pathParam(c, "connector")
	if err != nil {
		return err
	}
	if err := approval.CheckFields(approval.Field{Name: "connector", Value: name, Rule: approval.RuleName, Required: true}); err != nil {
		return err
	}
	if err := h.DB.DeleteConnector(c.Request().Context(), CurrentAPIKey(c).Actor(), name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
