package approval

// Verdict is the check's answer to a runtime.
type Verdict string

// Verdicts.
const (
	Allow   Verdict = "allow"
	Deny    Verdict = "deny"
	Pending Verdict = "pending"
)

// Via says what allowed a call.
type Via string

// Reasons a call was allowed.
const (
	ViaPolicy            Via = "policy"
	ViaConversationGrant Via = "conversation_grant"
	ViaAlwaysAllow       Via = "always_allow"
	ViaPreapproval       Via = "preapproval"
	// ViaJoined: the person approved this very call when another
	// Countersign guard of it asked (a hook and the MCP gateway guard
	// one call; invariant 18), and this guard used that approval once.
	ViaJoined Via = "joined"
)

// ConditionResult is the outcome of a policy condition over the arguments.
type ConditionResult int

// Condition results. Anything but ConditionFalse means "ask".
const (
	NoCondition    ConditionResult = iota // the policy has none
	ConditionTrue                         // ask
	ConditionFalse                        // run without asking
	ConditionError                        // could not be evaluated: ask
)

// CheckInput is everything the decision order looks at, gathered by the
// caller inside one transaction.
type CheckInput struct {
	Policy             Policy
	Condition          ConditionResult
	InPlaybookRun      bool
	PreApproved        bool // the pair was laid out for this run
	RunRefused         bool // the run was refused at start, or is unknown: it runs nothing
	RejectionsThisTurn int  // explicit rejections of this tool+digest in this turn since the last approval
	DeniedThreshold    int
	ConversationGrant  bool // a valid conversation grant exists
	AlwaysGrant        bool // a valid "Always allow" grant exists
	ScopedGrant        bool // a valid scoped grant covers these arguments
}

// Outcome is the check's verdict with its code or its reason.
type Outcome struct {
	Verdict Verdict
	Code    ReasonCode // on Deny
	Via     Via        // on Allow
	// Scoped is set when a scoped grant allowed the call (Via is
	// ViaAlwaysAllow: to the runtime it is an "Always allow").
	Scoped bool
}

// Evaluate applies the check's decision order:
// blocked → deny; in a playbook run → deny if the run was refused at start,
// else pre-approved or deny, never prompt;
// allowed by policy (or the condition is false) → allow; rejected too often
// in this turn → deny; conversation grant → allow; "Always allow" → allow;
// a scoped grant that covers the arguments → allow; otherwise a person
// decides.
func Evaluate(in CheckInput) Outcome {
	p := in.Policy
	switch p.Mode {
	case ModeBlock:
		return Outcome{Verdict: Deny, Code: CodeBlockedByPolicy}
	case ModeAllow, ModeRequireApproval:
	default: // an unknown mode fails closed
		return Outcome{Verdict: Deny, Code: CodeBlockedByPolicy}
	}
	needsApproval := p.Mode == ModeRequireApproval && in.Condition != ConditionFalse
	if p.Mode == ModeRequireApproval && p.Condition == "" && in.Condition == ConditionFalse {
		needsApproval = true // a condition result without a condition is a caller bug: ask
	}
	if in.InPlaybookRun {
		if in.RunRefused {
			return Outcome{Verdict: Deny, Code: CodeApprovalUnavailable}
		}
		if !needsApproval {
			return Outcome{Verdict: Allow, Via: ViaPolicy}
		}
		if in.PreApproved {
			return Outcome{Verdict: Allow, Via: ViaPreapproval}
		}
		return Outcome{Verdict: Deny, Code: CodeApprovalUnavailable}
	}
	if !needsApproval {
		return Outcome{Verdict: Allow, Via: ViaPolicy}
	}
	threshold := in.DeniedThreshold
	if threshold < 1 {
		threshold = 1
	}
	if in.RejectionsThisTurn >= threshold {
		return Outcome{Verdict: Deny, Code: CodeDeniedRepeated}
	}
	if p.StandingApproval && in.ConversationGrant {
		return Outcome{Verdict: Allow, Via: ViaConversationGrant}
	}
	if p.StandingApproval && in.AlwaysGrant {
		return Outcome{Verdict: Allow, Via: ViaAlwaysAllow}
	}
	if p.ScopedOffered() && in.ScopedGrant {
		return Outcome{Verdict: Allow, Via: ViaAlwaysAllow, Scoped: true}
	}
	return Outcome{Verdict: Pending}
}
