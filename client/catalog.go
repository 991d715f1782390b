package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/countersign/countersign/approval"
)

// ConnectorTool describes one tool for SyncConnector.
type ConnectorTool struct {
	Name             string               `json:"name"`
	DisplayName      string               `json:"display_name,omitempty"`
	Description      string               `json:"description,omitempty"`
	Annotations      approval.Annotations `json:"annotations"`
	StandingApproval *bool                `json:"standing_approval,omitempty"`
	// ShellArgument names the argument that holds a shell command line,
	// so that its calls show the command parsed.
	ShellArgument string `json:"shell_argument,omitempty"`
}

// Connector is a connector's full tool list.
type Connector struct {
	DisplayName string          `json:"display_name"`
	Kind        string          `json:"kind"` // builtin or connector
	Tools       []ConnectorTool `json:"tools"`
}

// SyncConnector registers a connector and its full tool list; tools left
// out are retired. Existing tools keep their policy.
func (c *Client) SyncConnector(ctx context.Context, name string, conn Connector) error {
	return c.do(ctx, http.MethodPut, "/api/v1/connectors/"+url.PathEscape(name), conn, nil)
}

// ToolRegistration describes one tool for RegisterTool. The connector
// fields are used only when the connector does not exist yet (Kind:
// builtin or connector; default connector).
type ToolRegistration struct {
	Name                 string               `json:"-"` // the tool's name, sent in the path
	DisplayName          string               `json:"display_name,omitempty"`
	Description          string               `json:"description,omitempty"`
	Annotations          approval.Annotations `json:"annotations"`
	StandingApproval     *bool                `json:"standing_approval,omitempty"`
	ShellArgument        string               `json:"shell_argument,omitempty"` // the argument holding a shell command line
	ConnectorDisplayName string               `json:"connector_display_name,omitempty"`
	ConnectorKind        string               `json:"connector_kind,omitempty"`
}

// RegisteredTool is what RegisterTool did.
type RegisteredTool struct {
	Connector        string `json:"connector"`
	Tool             string `json:"tool"`
	Created          bool   `json:"created"`           // new: it got the default policy
	Restored         bool   `json:"restored"`          // was retired, is back with its policy
	ConnectorCreated bool   `json:"connector_created"` // the connector was created for it
	Mode             string `json:"mode"`              // its policy mode now
}

// RegisterTool registers or updates one tool of a connector without
// replacing the connector's list. A new tool gets the default policy for
// its annotations; an existing one keeps its policy whatever the
// annotations say. A connector an administrator deleted is refused (*Error
// 409 connector_deleted).
func (c *Client) RegisterTool(ctx context.Context, connector string, t ToolRegistration) (RegisteredTool, error) {
	var out RegisteredTool
	err := c.do(ctx, http.MethodPut, "/api/v1/connectors/"+url.PathEscape(connector)+"/tools/"+url.PathEscape(t.Name), t, &out)
	return out, err
}
