package handlers

import (
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/views"
)

// auditActionGroups sorts the audit actions into the filter's groups of
// checkboxes. An action no group names (a new one) lands in "Other", so
// that every action can be chosen.
var auditActionGroups = []struct {
	Title   string
	Actions []string
}{
	{"Decisions", []string{approval.ActionRequested, approval.ActionApproved, approval.ActionApprovedConversation, approval.ActionAlwaysAllowed, approval.ActionAlwaysMatching,
		approval.ActionRejected, approval.ActionExpired, approval.ActionCancelled, approval.ActionClaimed, approval.ActionJoined}},
	{"Without asking", []string{approval.ActionAllowedByPolicy, approval.ActionAutoApprovedConv, approval.ActionAutoApprovedAlways, approval.ActionAutoApprovedScoped, approval.ActionBlockedRepeated,
		approval.ActionBlockedByPolicy}},
	{"Grants and policies", []string{approval.ActionGrantRevoked, approval.ActionPolicyChanged}},
	{"Catalog", []string{approval.ActionConnectorSynced, approval.ActionConnectorDeleted, approval.ActionToolRegistered}},
	{"Playbooks", []string{approval.ActionPlaybookRegistered, approval.ActionPlaybookUpdated, approval.ActionPlaybookEnabled,
		approval.ActionPlaybookDisabled, approval.ActionPreapprovalGranted, approval.ActionPreapprovalRevoked, approval.ActionPreapprovalLapsed,
		approval.ActionRunStarted, approval.ActionRunRefused, approval.ActionAllowedByPreapproval, approval.ActionRefusedInRun}},
	{"Access", []string{approval.ActionAPIKeyCreated, approval.ActionAPIKeyRevoked, approval.ActionAPIKeyChanged, approval.ActionAPIKeyRenamed, approval.ActionSignIn, approval.ActionSignOut}},
	{"Passkeys", approval.ProofActions},
	{"Teams", []string{approval.ActionTeamCreated, approval.ActionTeamChanged, approval.ActionTeamMemberAdded, approval.ActionTeamMemberRemoved}},
	{"Escalation and delegation", []string{approval.ActionEscalated, approval.ActionDelegationStarted, approval.ActionDelegationEnded}},
}

// actionGroups returns the filter's groups with the chosen actions checked.
func actionGroups(chosen []string) []views.ActionGroup {
	known := map[string]bool{}
	for _, a := range approval.AllActions {
		known[a] = true
	}
	var out []views.ActionGroup
	placed := map[string]bool{}
	for _, g := range auditActionGroups {
		vg := views.ActionGroup{Title: g.Title}
		for _, a := range g.Actions {
			if known[a] {
				vg.Actions, placed[a] = append(vg.Actions, a), true
			}
		}
		out = append(out, vg)
	}
	other := views.ActionGroup{Title: "Other"}
	for _, a := range approval.AllActions {
		if !placed[a] {
			other.Actions = append(other.Actions, a)
		}
	}
	if len(other.Actions) > 0 {
		out = append(out, other)
	}
	for i := range out {
		out[i].Chosen = chosen
	}
	return out
}

// auditNames is the catalog's display names for the audit screen: the
// filter's lists, and each line's connector and tool.
type auditNames struct {
	connectors []views.Option
	tools      []views.Option
	connector  map[string]string // name → display
	tool       map[[2]string]string
	toolByName map[string]string // display (lower case) → name
}

func (h *Handler) auditNames(ctx context.Context) (auditNames, error) {
	rows, err := h.DB.AuditToolNames(ctx)
	if err != nil {
		return auditNames{}, err
	}
	n := auditNames{connector: map[string]string{}, tool: map[[2]string]string{}, toolByName: map[string]string{}}
	seenTool := map[string]int{}
	for _, r := range rows {
		if _, ok := n.connector[r.Connector]; !ok {
			n.connector[r.Connector] = connectorLabel(r.ConnectorKind, r.ConnectorDisplay)
			n.connectors = append(n.connectors, views.Option{Value: r.Connector, Label: n.connector[r.Connector]})
		}
		n.tool[[2]string{r.Connector, r.Tool}] = r.ToolDisplay
		if _, ok := n.toolByName[strings.ToLower(r.ToolDisplay)]; !ok {
			n.toolByName[strings.ToLower(r.ToolDisplay)] = r.Tool
		}
		// The filter matches a tool by name, whatever its connector: one
		// option per name, saying which connectors have it.
		label := r.ToolDisplay + " (" + n.connector[r.Connector] + ")"
		if i, ok := seenTool[r.Tool]; ok {
			n.tools[i].Label = strings.TrimSuffix(n.tools[i].Label, ")") + ", " + n.connector[r.Connector] + ")"
			continue
		}
		seenTool[r.Tool] = len(n.tools)
		n.tools = append(n.tools, views.Option{Value: r.Tool, Label: label})
	}
	return n, nil
}

// toolName is the tool a filter value names: a tool's name, or its
// display name ("Delete file" finds delete_file).
func (n auditNames) toolName(v string) string {
	for _, o := range n.tools {
		if o.Value == v {
			return v
		}
	}
	if name, ok := n.toolByName[strings.ToLower(v)]; ok {
		return name
	}
	return v
}

// withCurrent keeps a filter value the catalog no longer lists choosable.
func withCurrent(opts []views.Option, v string) []views.Option {
	if v == "" {
		return opts
	}
	for _, o := range opts {
		if o.Value == v {
			return opts
		}
	}
	return append(opts, views.Option{Value: v, Label: v})
}

// policyDiff is a "policy changed" line's before → after, field by field,
// in words.
func policyDiff(detail map[string]any) []views.DiffRow {
	before, _ := detail["before"].(map[string]any)
	after, _ := detail["after"].(map[string]any)
	if before == nil || after == nil {
		return nil
	}
	show := func(field string, v any) string {
		switch field {
		case "mode":
			s, _ := v.(string)
			return modeName(approval.Mode(s))
		case "standing_approval":
			b, _ := v.(bool)
			return offered(b)
		case "condition":
			if s, _ := v.(string); s != "" {
				return s
			}
			return "none"
		}
		return fmt.Sprint(v)
	}
	var rows []views.DiffRow
	for _, f := range []struct{ key, label string }{{"mode", "Mode"}, {"standing_approval", "Standing approval"},
		{"condition", "Condition"}, {"version", "Policy version"}} {
		b, a := show(f.key, before[f.key]), show(f.key, after[f.key])
		if b != a {
			rows = append(rows, views.DiffRow{Field: f.label, Before: b, After: a})
		}
	}
	return rows
}
