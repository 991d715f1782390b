package appserver

import (
	"encoding/json"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
)

const methodPermissionsApproval = "item/permissions/requestApproval"

// permissionsParams is item/permissions/requestApproval's params.
type permissionsParams struct {
	ThreadID    string          `json:"threadId"`
	TurnID      string          `json:"turnId"`
	ItemID      string          `json:"itemId"`
	Cwd         *string         `json:"cwd"`
	Reason      *string         `json:"reason"`
	Permissions json.RawMessage `json:"permissions"`
}

// requestedPermissions is the RequestPermissionProfile as the card lists
// it: each kind of permission its own argument. Only the two kinds the
// protocol defines are known; a profile with anything else is not answered.
type requestedPermissions struct {
	FileSystem json.RawMessage `json:"fileSystem,omitempty"`
	Network    json.RawMessage `json:"network,omitempty"`
}

// permissionsArgs are what a permissions approval binds to.
type permissionsArgs struct {
	Network    json.RawMessage `json:"network,omitempty"`
	FileSystem json.RawMessage `json:"fileSystem,omitempty"`
	Cwd        string          `json:"cwd,omitempty"`
	Reason     string          `json:"reason,omitempty"`
}

// permissionsRequest maps a permissions request to a check of Codex's
// request_permissions, each requested permission an argument. The answer
// grants exactly the profile shown (all of it) or nothing.
func (p *Proxy) permissionsRequest(params json.RawMessage) (asked, bool) {
	var q permissionsParams
	if json.Unmarshal(params, &q) != nil || !ids(q.ThreadID, q.TurnID, q.ItemID) {
		return asked{}, false
	}
	var all map[string]json.RawMessage
	var req requestedPermissions
	if json.Unmarshal(q.Permissions, &all) != nil || json.Unmarshal(q.Permissions, &req) != nil {
		return asked{}, false
	}
	for k := range all {
		if k != "fileSystem" && k != "network" {
			return asked{}, false // a permission this proxy cannot show
		}
	}
	args := permissionsArgs{}
	if hasValue(req.Network) {
		args.Network = req.Network
	}
	if hasValue(req.FileSystem) {
		args.FileSystem = req.FileSystem
	}
	if args.Network == nil && args.FileSystem == nil {
		return asked{}, false
	}
	t, err := hook.CodexTarget("request_permissions")
	if err != nil {
		return asked{}, false
	}
	rt := &client.Runtime{}
	if q.Cwd != nil {
		args.Cwd, rt.WorkingDirectory = *q.Cwd, *q.Cwd
	}
	reason := ""
	if q.Reason != nil {
		reason = *q.Reason
	}
	if approval.CheckFields(approval.Field{Name: "reason", Value: reason, Rule: approval.RuleReason}) != nil {
		args.Reason, reason = reason, ""
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return asked{}, false
	}
	granted := map[string]json.RawMessage{}
	if args.Network != nil {
		granted["network"] = args.Network
	}
	if args.FileSystem != nil {
		granted["fileSystem"] = args.FileSystem
	}
	call := client.Call{CallID: callID(q.ThreadID, q.ItemID, nil), ConversationID: q.ThreadID, TurnID: q.TurnID,
		Connector: t.Connector, Tool: t.Tool, Arguments: string(raw), Reason: reason, Runtime: rt,
		OfferedDecisions: []string{string(approval.Approve), string(approval.Reject), string(approval.ApproveConversation)}}
	return asked{call: call, target: t, result: func(out client.Outcome, err error) map[string]any {
		return permissionsAnswer(out, err, granted)
	}}, true
}

// permissionsAnswer is the whole result of a permissions request (it has
// no decision field): approved, exactly the requested profile for the turn
// (or, in this conversation, the session); anything else, nothing.
func permissionsAnswer(out client.Outcome, err error, requested map[string]json.RawMessage) map[string]any {
	if err != nil || !out.Allowed {
		return map[string]any{"permissions": map[string]any{}, "scope": "turn"}
	}
	scope := "turn"
	if out.Via == "person" && out.Scope == string(approval.ScopeConversation) {
		scope = "session"
	}
	return map[string]any{"permissions": requested, "scope": scope}
}
