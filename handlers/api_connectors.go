package handlers

import (
	"net/http"
	"regexp"

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
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

// APIConnectorPut upserts a connector and its full tool list.
func (h *Handler) APIConnectorPut(c echo.Context) error {
	name := c.Param("connector")
	if !nameRE.MatchString(name) {
		return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "A connector name is 1–128 letters, digits, '_', '.', ':' or '-'.")
	}
	var body connectorBody
	if err := decodeJSON(c, &body); err != nil {
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
	for i, t := range body.Tools {
		if !nameRE.MatchString(t.Name) {
			return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "tools[%d].name must be 1–128 letters, digits, '_', '.', ':' or '-'.", i)
		}
		if seen[t.Name] {
			return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "The tool %q is listed twice.", t.Name)
		}
		seen[t.Name] = true
		if t.DisplayName == "" {
			t.DisplayName = t.Name
		}
		sync.Tools = append(sync.Tools, db.ToolSync{Name: t.Name, DisplayName: t.DisplayName, Description: t.Description,
			Annotations: t.Annotations, StandingApproval: t.StandingApproval})
	}
	if err := h.DB.SyncConnector(c.Request().Context(), CurrentAPIKey(c).Actor(), sync); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"connector": name, "tools": len(sync.Tools)})
}

// APIConnectorDelete marks a connector deleted.
func (h *Handler) APIConnectorDelete(c echo.Context) error {
	if err := h.DB.DeleteConnector(c.Request().Context(), CurrentAPIKey(c).Actor(), c.Param("connector")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
