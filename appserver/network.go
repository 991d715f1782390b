package appserver

import (
	"encoding/json"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
)

// networkContext is a command approval's networkApprovalContext: the
// app-server groups its network prompts by host and protocol, and one
// decision covers the group.
type networkContext struct {
	Host     string  `json:"host"`
	Protocol string  `json:"protocol"`
	Port     *uint16 `json:"port"` // not in 0.169.0; shown when a later release sends it
}

// networkArgs are what a network approval binds to: the host, protocol
// (and port), and the command asking, when the app-server names it.
type networkArgs struct {
	Host     string  `json:"host"`
	Protocol string  `json:"protocol"`
	Port     *uint16 `json:"port,omitempty"`
	Command  string  `json:"command,omitempty"`
	Cwd      string  `json:"cwd,omitempty"`
	Reason   string  `json:"reason,omitempty"`
}

// networkRequest maps a network prompt to a check of Codex's
// network_access: a network card, not a shell command.
func networkRequest(c commandParams, kind string) (asked, bool) {
	var n networkContext
	if kind != kindCommand || json.Unmarshal(c.NetworkApprovalContext, &n) != nil || n.Host == "" || n.Protocol == "" {
		return asked{}, false
	}
	t, err := hook.CodexTarget("network_access")
	if err != nil {
		return asked{}, false
	}
	args := networkArgs{Host: n.Host, Protocol: n.Protocol, Port: n.Port}
	if c.Command != nil {
		args.Command = *c.Command
	}
	rt := &client.Runtime{}
	if c.Cwd != nil {
		args.Cwd, rt.WorkingDirectory = *c.Cwd, *c.Cwd
	}
	reason := ""
	if c.Reason != nil {
		reason = *c.Reason
	}
	if approval.CheckFields(approval.Field{Name: "reason", Value: reason, Rule: approval.RuleReason}) != nil {
		args.Reason, reason = reason, ""
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return asked{}, false
	}
	avail := availableOf(c, kind)
	avail.amendment = nil // an execpolicy rule is not what a network prompt grants
	if c.AvailableDecisions == nil {
		avail.hostRule = nil
	}
	offers := []string{string(approval.Approve), string(approval.Reject)}
	if avail.session {
		offers = append(offers, string(approval.ApproveConversation))
	}
	if avail.hostRule != nil {
		offers = append(offers, string(approval.AlwaysAllow))
	}
	call := client.Call{CallID: callID(c.ThreadID, c.ItemID, c.ApprovalID), ConversationID: c.ThreadID, TurnID: c.TurnID,
		Connector: t.Connector, Tool: t.Tool, Arguments: string(raw), Reason: reason, Runtime: rt, OfferedDecisions: offers}
	return asked{call: call, target: t, answer: func(out client.Outcome, err error) any {
		return networkDecision(out, err, avail)
	}}, true
}

// networkDecision: approve → accept; in this conversation →
// acceptForSession; always → the app-server's own "allow this host" rule;
// refusals as for commands.
func networkDecision(out client.Outcome, err error, a available) any {
	if err != nil {
		return decisionDecline
	}
	if out.Allowed {
		switch {
		case out.Via == "person" && out.Scope == string(approval.ScopeConversation) && a.session:
			return decisionAcceptForSession
		case out.Via == "person" && out.Scope == string(approval.ScopeAlways) && a.hostRule != nil:
			return map[string]any{"applyNetworkPolicyAmendment": map[string]any{"network_policy_amendment": a.hostRule}}
		}
		return decisionAccept
	}
	return refusal(out)
}
