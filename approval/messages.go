package approval

import (
	"strings"
)

// ReasonCode is a stable code a model can act on.
type ReasonCode string

// Reason codes.
const (
	CodeApprovalDenied      ReasonCode = "approval_denied"
	CodeApprovalTimeout     ReasonCode = "approval_timeout"
	CodeApprovalCancelled   ReasonCode = "approval_cancelled"
	CodeDeniedRepeated      ReasonCode = "approval_denied_repeated"
	CodeApprovalUnavailable ReasonCode = "approval_unavailable"
	CodeBlockedByPolicy     ReasonCode = "blocked_by_policy"
	CodePolicyUnavailable   ReasonCode = "policy_unavailable"
	CodePlaybookApproval    ReasonCode = "PLAYBOOK_TOOL_APPROVAL_REQUIRED"
)

// CodeApprovalPending is not a failure: a person has not answered yet and
// the runtime stopped waiting (an agent's hook or a gateway has a deadline).
// The call did not run; the same call made again with attach_to_pending
// joins the same item and runs once it is approved.
const CodeApprovalPending ReasonCode = "approval_pending"

// MessageInput is what a model-facing message may mention.
type MessageInput struct {
	Tool       string // display name of the tool
	UserReason string // a reviewer's reason, quoted verbatim as the user's words
	Playbook   string
	URL        string // the item's page, for approval_pending
}

// Message is the text a model receives with code: what happened, and what
// to do next.
func Message(code ReasonCode, in MessageInput) string {
	tool := in.Tool
	if tool == "" {
		tool = "the tool"
	}
	var b strings.Builder
	switch code {
	case CodeApprovalDenied:
		b.WriteString("The user rejected this call to " + tool + ", so it did not run.")
		if r := strings.TrimSpace(in.UserReason); r != "" {
			b.WriteString(" The user's words: \"" + r + "\".")
		}
		b.WriteString(" Do not call it again with the same arguments. Tell the user it did not run, take their reason into account, and continue with what you can do without it.")
	case CodeApprovalTimeout:
		b.WriteString("Nobody answered the approval request for " + tool + " in time, so it did not run. Do not retry it now. Tell the user it is waiting for their approval and continue with what you can do without it.")
	case CodeApprovalPending:
		b.WriteString("This call to " + tool + " is waiting for the user's approval")
		if in.URL != "" {
			b.WriteString(" at " + in.URL)
		}
		b.WriteString(", so it has not run yet. Tell the user it needs their approval")
		if in.URL != "" {
			b.WriteString(" and give them the link")
		}
		b.WriteString(". Once they have approved it, make the same call again with exactly the same arguments and it will run; do not try to reach the same result another way.")
	case CodeApprovalCancelled:
		b.WriteString("The turn was stopped, so this call to " + tool + " was cancelled and did not run. Do not retry it.")
	case CodeDeniedRepeated:
		b.WriteString("The user has already rejected this exact call to " + tool + " in this turn, so it was not asked again and did not run. Do not call it again with the same arguments. Tell the user it did not run and continue without it.")
	case CodeApprovalUnavailable:
		b.WriteString("This is an unattended run")
		if in.Playbook != "" {
			b.WriteString(" of the playbook \"" + in.Playbook + "\"")
		}
		b.WriteString(" and " + tool + " is not pre-approved for it, so it did not run and nobody can approve it now. Do not retry it. Report that the playbook's owner must approve this tool, and continue with the steps that do not need it.")
	case CodeBlockedByPolicy:
		b.WriteString("An administrator has blocked " + tool + ", so it did not run. Do not retry it. Tell the user it is blocked by policy and continue with what you can do without it.")
	case CodePlaybookApproval:
		b.WriteString("The playbook uses tools that need its owner's approval before it can be enabled or scheduled.")
	default: // CodePolicyUnavailable and anything unknown: fail closed
		b.WriteString("The approval check for " + tool + " could not be completed, so the call did not run. Do not retry it right away. Tell the user the action could not be authorised and continue with what you can do without it.")
	}
	return b.String()
}

// CodeForStatus is the reason code a terminal, not-approved status carries.
func CodeForStatus(s Status) ReasonCode {
	switch s {
	case StatusRejected:
		return CodeApprovalDenied
	case StatusExpired:
		return CodeApprovalTimeout
	case StatusCancelled:
		return CodeApprovalCancelled
	}
	return ""
}
