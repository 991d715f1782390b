package approval

import "strings"

// Outcome of a call as the Activity page groups them: what happened to it,
// whoever or whatever decided.
const (
	OutcomeAllowed    = "allowed"    // allowed without asking: policy, a standing grant, a pre-approval
	OutcomeApproved   = "approved"   // a person approved it
	OutcomeRejected   = "rejected"   // a person rejected it
	OutcomeDenied     = "denied"     // refused without asking: blocked, refused in a run, rejected too often
	OutcomeUnanswered = "unanswered" // nobody answered in time, or the turn was stopped
)

// ActivityOutcomes lists the outcomes in the order the Activity filter
// offers them.
var ActivityOutcomes = []string{OutcomeAllowed, OutcomeApproved, OutcomeRejected, OutcomeDenied, OutcomeUnanswered}

// activityActions are the audit actions that end a call (one line per
// call), by outcome. A request or a claim is not an end: the Activity page
// shows each call once, by what decided it.
var activityActions = map[string][]string{
	OutcomeAllowed: {ActionAllowedByPolicy, ActionAutoApprovedConv, ActionAutoApprovedAlways, ActionAutoApprovedScoped,
		ActionAllowedByPreapproval},
	OutcomeApproved:   {ActionApproved, ActionApprovedConversation, ActionAlwaysAllowed, ActionAlwaysMatching},
	OutcomeRejected:   {ActionRejected},
	OutcomeDenied:     {ActionBlockedByPolicy, ActionBlockedRepeated, ActionRefusedInRun},
	OutcomeUnanswered: {ActionExpired, ActionCancelled},
}

// ActivityActions are the audit actions of outcome, or of every outcome
// when outcome is "" (nil for an unknown outcome).
func ActivityActions(outcome string) []string {
	if outcome != "" {
		return activityActions[outcome]
	}
	var all []string
	for _, o := range ActivityOutcomes {
		all = append(all, activityActions[o]...)
	}
	return all
}

// ActivityOutcomeOf is the outcome an audit action ends a call with, or ""
// for an action that does not end a call.
func ActivityOutcomeOf(action string) string {
	for o, actions := range activityActions {
		for _, a := range actions {
			if a == action {
				return o
			}
		}
	}
	return ""
}

// GrantActions are the actions of a call a standing grant allowed; their
// detail names the grant (grant_id).
var GrantActions = []string{ActionAutoApprovedConv, ActionAutoApprovedAlways, ActionAutoApprovedScoped}

// CallEnd is what the Activity page knows of what decided a call: the
// ending audit line and what it names. It never holds argument contents.
type CallEnd struct {
	Action string
	// Owner is whose agent made the call, as the viewer reads it: "" when
	// it is the viewer ("your standing approval").
	Owner string
	// An allow by policy: the rule ("allow", or "condition" with the
	// admin's condition that was false for the call).
	Rule, Condition string
	// An allow by a standing grant: its scope in words (a scoped grant),
	// and whether it was for one conversation.
	GrantScope        string
	GrantConversation bool
	// An allow by a pre-approval, or a refusal in a run: the playbook's
	// name and the run's id.
	Playbook, RunID string
	// A person's decision: who, and a rejection's reason.
	Reviewer, Reason string
}

// Words says in words what decided the call.
func (e CallEnd) Words() string {
	whose := "your"
	if e.Owner != "" {
		whose = e.Owner + "’s"
	}
	switch e.Action {
	case ActionAllowedByPolicy:
		if e.Rule == "condition" {
			return "Allowed by policy — rule: ask only when " + e.Condition + "; false for this call"
		}
		return "Allowed by policy — rule: allow without asking"
	case ActionAutoApprovedConv:
		return "Allowed by " + whose + " standing approval for this tool in this conversation"
	case ActionAutoApprovedAlways:
		return "Allowed by " + whose + " standing approval for this tool in any conversation"
	case ActionAutoApprovedScoped:
		scope := e.GrantScope
		if scope == "" {
			scope = "calls like an earlier one"
		}
		return "Allowed by " + whose + " standing approval: " + scope
	case ActionAllowedByPreapproval:
		return "Allowed by playbook " + e.Playbook + ", run " + shortID(e.RunID)
	case ActionApproved:
		return "Approved by " + e.Reviewer
	case ActionApprovedConversation:
		return "Approved by " + e.Reviewer + ", with this conversation"
	case ActionAlwaysAllowed, ActionAlwaysMatching:
		return "Approved by " + e.Reviewer + ", with a standing approval"
	case ActionRejected:
		if e.Reason == "" {
			return "Rejected by " + e.Reviewer + " (no reason given)"
		}
		return "Rejected by " + e.Reviewer + ": " + e.Reason
	case ActionBlockedByPolicy:
		return "Denied: an admin blocked this tool"
	case ActionBlockedRepeated:
		return "Denied: rejected too often in this turn, so not asked again"
	case ActionRefusedInRun:
		return "Denied: playbook " + e.Playbook + " has no pre-approval for this tool (run " + shortID(e.RunID) + ")"
	case ActionExpired:
		return "Not run: nobody answered in time"
	case ActionCancelled:
		return "Not run: cancelled (the turn was stopped or the tool blocked)"
	}
	return e.Action
}

// shortID is the first block of a run's id, enough to tell runs apart.
func shortID(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	return id
}
