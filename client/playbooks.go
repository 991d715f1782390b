package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/countersign/countersign/approval"
)

// RegisterPlaybook registers or updates a playbook owned by the person
// with OIDC subject owner.
func (c *Client) RegisterPlaybook(ctx context.Context, id, owner string, def approval.Definition) error {
	return c.do(ctx, http.MethodPut, "/api/v1/playbooks/"+url.PathEscape(id), map[string]any{"owner": owner, "definition": def}, nil)
}

// Run is a started playbook run: pass ID as Call.PlaybookRunID.
type Run struct {
	ID          string          `json:"run_id"`
	Preapproved []approval.Pair `json:"preapproved"`
}

// StartRun starts an unattended run. A playbook that is disabled or whose
// tools lack their owner's approval is refused with an *Error (409).
func (c *Client) StartRun(ctx context.Context, playbookID string) (Run, error) {
	var r Run
	err := c.do(ctx, http.MethodPost, "/api/v1/playbooks/"+url.PathEscape(playbookID)+"/runs", nil, &r)
	return r, err
}
