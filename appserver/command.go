package appserver

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
)

// commandParams is item/commandExecution/requestApproval's params as the
// proxy reads them (CommandExecutionRequestApprovalParams).
type commandParams struct {
	ThreadID                    string          `json:"threadId"`
	TurnID                      string          `json:"turnId"`
	ItemID                      string          `json:"itemId"`
	ApprovalID                  *string         `json:"approvalId"`
	Kind                        *string         `json:"kind"`
	Command                     *string         `json:"command"`
	Cwd                         *string         `json:"cwd"`
	CommandActions              json.RawMessage `json:"commandActions"`
	Reason                      *string         `json:"reason"`
	ProposedExecpolicyAmendment []string        `json:"proposedExecpolicyAmendment"`
	NetworkApprovalContext      json.RawMessage `json:"networkApprovalContext"`
	// AvailableDecisions is sent by 0.169.0 although its generated schema
	// does not list it: the decisions the client may answer with.
	AvailableDecisions []json.RawMessage `json:"availableDecisions"`
}

// available is what availableDecisions allows; all true when absent.
type available struct {
	session   bool
	amendment []string // the amendment acceptWithExecpolicyAmendment would carry
	// scoped: "Always allow calls like this" may be offered (its scope
	// stays within the amendment).
	scoped bool
	// hostRule is the "allow" rule applyNetworkPolicyAmendment carries for
	// a network prompt, when offered.
	hostRule json.RawMessage
}

// availableOf reads availableDecisions. Without it (older servers), a
// plain command offers acceptForSession and the proposed amendment.
func availableOf(c commandParams, kind string) available {
	if c.AvailableDecisions == nil {
		a := available{session: kind == kindCommand}
		if kind == kindCommand {
			a.amendment = c.ProposedExecpolicyAmendment
		}
		return a
	}
	var a available
	for _, raw := range c.AvailableDecisions {
		var name string
		if json.Unmarshal(raw, &name) == nil {
			a.session = a.session || name == decisionAcceptForSession
			continue
		}
		var obj struct {
			Accept *struct {
				Amendment []string `json:"execpolicy_amendment"`
			} `json:"acceptWithExecpolicyAmendment"`
			Network *struct {
				Rule json.RawMessage `json:"network_policy_amendment"`
			} `json:"applyNetworkPolicyAmendment"`
		}
		if json.Unmarshal(raw, &obj) != nil {
			continue
		}
		if obj.Accept != nil && len(obj.Accept.Amendment) > 0 {
			a.amendment = obj.Accept.Amendment
		}
		var rule struct {
			Action string `json:"action"`
		}
		if obj.Network != nil && json.Unmarshal(obj.Network.Rule, &rule) == nil && rule.Action == "allow" {
			a.hostRule = obj.Network.Rule
		}
	}
	return a
}

// Command kinds (CommandExecutionApprovalKind).
const (
	kindCommand      = "command"
	kindHumanCommand = "humanCommand" // only accept, decline and cancel are valid
)

// commandArgs are the arguments Countersign is asked about and the
// approval binds to: the command line (parsed and flagged as Codex's shell
// tool), where it runs, and Codex's own reading of it.
type commandArgs struct {
	Command string `json:"command"`
	// Shell is how Command runs when Codex sent it wrapped as
	// `/bin/bash -lc '<script>'` (approval.UnwrapLoginBash): Command is then the script.
	Shell          string          `json:"shell,omitempty"`
	Cwd            string          `json:"cwd,omitempty"`
	CommandActions json.RawMessage `json:"commandActions,omitempty"`
	// Amendment is Codex's proposed command-prefix rule, shown when
	// "Always allow calls like this" is offered for it: Codex keeps that
	// rule only when the person's grant is exactly it (amendmentMatches).
	Amendment []string `json:"proposedExecpolicyAmendment,omitempty"`
	// Reason is Codex's reason when it cannot be the item's reason (too
	// long, or characters a reason may not hold): it is then shown whole
	// as an argument.
	Reason string `json:"reason,omitempty"`
}

// session tells this proxy's call ids from another run's.
var session = func() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// callID is the Countersign call id of one approval request.
func callID(thread, item string, approvalID *string) string {
	id := "codex-app/" + session + "/" + thread + "/" + item
	if approvalID != nil && *approvalID != "" {
		id += "/" + *approvalID
	}
	if approval.CheckFields(approval.Field{Name: "call_id", Value: id, Rule: approval.RuleID}) != nil {
		// Ids the check would refuse: this run's own.
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		id = "codex-app/" + session + "/" + hex.EncodeToString(b)
	}
	return id
}

// ids reports whether the thread and turn ids can be a conversation and a
// turn.
func ids(thread, turn, item string) bool {
	return thread != "" && turn != "" && item != "" && approval.CheckFields(
		approval.Field{Name: "conversation_id", Value: thread, Rule: approval.RuleID},
		approval.Field{Name: "turn_id", Value: turn, Rule: approval.RuleID}) == nil
}

// commandRequest maps a command approval to a check of Codex's shell tool.
// A shape it does not know — another kind (input to a running terminal),
// a network prompt, no command — is not answered.
func (p *Proxy) commandRequest(params json.RawMessage) (asked, bool) {
	var c commandParams
	if json.Unmarshal(params, &c) != nil || !ids(c.ThreadID, c.TurnID, c.ItemID) {
		return asked{}, false
	}
	kind := kindCommand
	if c.Kind != nil {
		kind = *c.Kind
	}
	if kind != kindCommand && kind != kindHumanCommand {
		return asked{}, false
	}
	if hasValue(c.NetworkApprovalContext) {
		return networkRequest(c, kind)
	}
	if c.Command == nil || strings.TrimSpace(*c.Command) == "" {
		return asked{}, false
	}
	t, err := hook.CodexTarget("Bash")
	if err != nil {
		return asked{}, false
	}
	args := commandArgs{Command: *c.Command, CommandActions: c.CommandActions}
	if script, wrapper, ok := approval.UnwrapLoginBash(*c.Command); ok {
		args.Command, args.Shell = script, wrapper
	}
	if !hasValue(args.CommandActions) {
		args.CommandActions = nil
	}
	rt := &client.Runtime{}
	if c.Cwd != nil {
		args.Cwd = *c.Cwd
		rt.WorkingDirectory = *c.Cwd
	}
	reason := ""
	if c.Reason != nil {
		reason = *c.Reason
	}
	avail := availableOf(c, kind)
	if approval.CheckFields(approval.Field{Name: "reason", Value: reason, Rule: approval.RuleReason}) != nil {
		args.Reason, reason = reason, ""
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return asked{}, false
	}
	avail.scoped = scopeWithinAmendment(raw, t.Registration.ShellArgument, avail.amendment)
	if avail.scoped {
		args.Amendment = avail.amendment
		if raw, err = json.Marshal(args); err != nil {
			return asked{}, false
		}
	}
	call := client.Call{CallID: callID(c.ThreadID, c.ItemID, c.ApprovalID), ConversationID: c.ThreadID, TurnID: c.TurnID,
		Connector: t.Connector, Tool: t.Tool, Arguments: string(raw), Reason: reason, Runtime: rt,
		OfferedDecisions: commandOffers(avail)}
	return asked{call: call, target: t, answer: func(out client.Outcome, err error) any {
		return commandDecision(out, err, avail)
	}}, true
}

func hasValue(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}

// commandOffers are the decisions the card may offer for a command: the
// plain ones; "in this conversation" when Codex offers acceptForSession;
// "Always allow calls like this" when Countersign's scope for the command
// stays within Codex's proposed amendment (scopeWithinAmendment). The
// whole-tool "Always allow" is never offered: it would let every later
// command of Codex's shell tool run unasked.
func commandOffers(a available) []string {
	offers := []string{string(approval.Approve), string(approval.Reject)}
	if a.session {
		offers = append(offers, string(approval.ApproveConversation))
	}
	if a.scoped {
		offers = append(offers, string(approval.AlwaysMatching))
	}
	return offers
}

// scopeWithinAmendment reports whether "Always allow calls like this" may
// be offered for a command with these arguments: Codex proposed an
// amendment, and the scope Countersign proposes (as the server will, from
// the same arguments and the tool's shell argument) is one simple command
// whose prefix is exactly the amendment's words. Every scope the person
// may choose from it (that prefix, with options where offered, or the
// exact command) then covers only commands the amendment starts. Anything
// else — a line Codex's wrapper does not exactly hold (approval.UnwrapLoginBash), a
// chain, a prefix shorter or longer than the amendment — offers no
// standing answer.
func scopeWithinAmendment(args []byte, shellArg string, amendment []string) bool {
	if len(amendment) == 0 || shellArg == "" {
		return false
	}
	p := approval.ProposeScope(approval.ParseArguments(string(args)), shellArg)
	if len(p.Shell) != 1 || p.Shell[0].Prefix == nil {
		return false
	}
	return slices.Equal(p.Shell[0].Prefix, amendment)
}

// Decisions of the app-server.
const (
	decisionAccept           = "accept"
	decisionAcceptForSession = "acceptForSession"
	decisionDecline          = "decline"
	decisionCancel           = "cancel"
)

// commandDecision maps Countersign's outcome to the app-server's decision:
// approve → accept; in this conversation → acceptForSession; always
// allow calls like this → acceptWithExecpolicyAmendment with Codex's own
// amendment when the grant the person confirmed is exactly what Codex's
// rule would be (amendmentMatches), else accept (Countersign keeps the
// scoped grant and answers Codex's next requests from it); reject or any
// refusal → decline; nobody answered in time or the item was cancelled →
// cancel. An error (no answer Countersign gave) is decline: never an
// accept.
func commandDecision(out client.Outcome, err error, a available) any {
	if err != nil {
		return decisionDecline
	}
	if out.Allowed {
		switch {
		case out.Via == "person" && out.Scope == string(approval.ScopeConversation) && a.session:
			return decisionAcceptForSession
		case out.Via == "person" && out.Scope == string(approval.ScopeAlways) && amendmentMatches(out.Grant, a):
			return map[string]any{decisionAcceptAmendment: map[string]any{"execpolicy_amendment": a.amendment}}
		}
		return decisionAccept
	}
	return refusal(out)
}

// decisionAcceptAmendment accepts and has Codex keep its proposed
// command-prefix rule (execpolicy amendment).
const decisionAcceptAmendment = "acceptWithExecpolicyAmendment"

// amendmentMatches reports whether Codex may be given its amendment for
// the grant the person confirmed: Codex offered it, and the grant is one
// rule on the command — its words exactly the amendment's, covering any
// further words including options (Codex's prefix rule matches any
// further words) — with no end (Codex keeps its rule until someone
// removes it). A grant that does not cover options, an exact grant, a
// timed one, several rules or another prefix: Codex is told only accept,
// since its rule would let it run more than Countersign allows.
func amendmentMatches(g *client.Grant, a available) bool {
	if g == nil || !a.scoped || len(a.amendment) == 0 || g.ExpiresAt != nil || g.Scope.Args != nil {
		return false
	}
	s := g.Scope.Shell
	if s == nil || s.Argument != commandArgument || len(s.Rules) != 1 {
		return false
	}
	r := s.Rules[0]
	return !r.Exact && r.Options && slices.Equal(r.Words, a.amendment)
}

// commandArgument is the argument holding the command line (commandArgs).
const commandArgument = "command"

// refusal is the decision for a call Countersign did not allow.
func refusal(out client.Outcome) string {
	switch approval.ReasonCode(out.Code) {
	case approval.CodeApprovalTimeout, approval.CodeApprovalCancelled:
		return decisionCancel
	}
	return decisionDecline
}

func replaceAll(s, old, new string) string { return strings.ReplaceAll(s, old, new) }
