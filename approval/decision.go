package approval

import "time"

// Decision is what a reviewer may answer.
type Decision string

// Decisions, in the order buttons are drawn.
const (
	Approve             Decision = "approve"
	ApproveConversation Decision = "approve_conversation"
	AlwaysAllow         Decision = "always"
	// AlwaysMatching allows this call and every later one whose arguments
	// the confirmed scope covers (GrantScope).
	AlwaysMatching Decision = "always_matching"
	Reject         Decision = "reject"
)

// Label is the button text for d.
func (d Decision) Label() string {
	switch d {
	case Approve:
		return "Approve"
	case ApproveConversation:
		return "Allow in this conversation"
	case AlwaysAllow:
		return "Always allow"
	case AlwaysMatching:
		return "Always allow calls like this"
	case Reject:
		return "Reject"
	}
	return string(d)
}

// Scope is how far an approval reaches.
func (d Decision) Scope() Scope {
	switch d {
	case ApproveConversation:
		return ScopeConversation
	case AlwaysAllow, AlwaysMatching:
		return ScopeAlways
	}
	return ScopeOnce
}

// AvailableDecisions is the set of buttons the server offers for a tool.
// Standing approvals are offered only where the policy allows them;
// "Always allow calls like this" also where it marks the tool matchable.
func AvailableDecisions(standingApproval, matchable bool) []Decision {
	switch {
	case standingApproval:
		return []Decision{Approve, ApproveConversation, AlwaysAllow, AlwaysMatching, Reject}
	case matchable:
		return []Decision{Approve, AlwaysMatching, Reject}
	}
	return []Decision{Approve, Reject}
}

// ScopedOffered reports whether a policy offers "Always allow calls like
// this", and so honours the scoped grants given under it.
func (p Policy) ScopedOffered() bool { return p.StandingApproval || p.Matchable }

// Offered reports whether d is among available.
func Offered(d Decision, available []string) bool {
	for _, a := range available {
		if a == string(d) {
			return true
		}
	}
	return false
}

// Status is the state of a pending item.
type Status string

// Statuses. Everything but pending and approved is terminal; approved ends
// in consumed when the runtime claims it.
const (
	StatusPending   Status = "pending"
	StatusApproved  Status = "approved"
	StatusRejected  Status = "rejected"
	StatusExpired   Status = "expired"
	StatusCancelled Status = "cancelled"
	StatusConsumed  Status = "consumed"
)

// Settled reports whether a runtime waiting on the item can stop waiting.
func (s Status) Settled() bool { return s != StatusPending }

// Scope is how far an approval reaches.
type Scope string

// Scopes.
const (
	ScopeOnce         Scope = "once"
	ScopeConversation Scope = "conversation"
	ScopeAlways       Scope = "always"
)

// Mode is a tool's policy mode.
type Mode string

// Modes.
const (
	ModeAllow           Mode = "allow"
	ModeRequireApproval Mode = "require_approval"
	ModeBlock           Mode = "block"
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool {
	return m == ModeAllow || m == ModeRequireApproval || m == ModeBlock
}

// Annotations are a tool's MCP hints as sent; nil means absent.
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

func hint(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// Unknown reports whether the runtime sent no hint at all: nothing is known
// of what the tool does (an agent's built-in from a release newer than the
// runtime's catalog, an MCP server that annotates nothing). Such a tool is
// shown as of unknown behaviour — not as destructive — and offers no
// standing approval until an administrator classifies it.
func (a Annotations) Unknown() bool {
	return a.ReadOnlyHint == nil && a.DestructiveHint == nil && a.IdempotentHint == nil && a.OpenWorldHint == nil
}

// ReadOnly applies the MCP default (false) to an absent hint.
func (a Annotations) ReadOnly() bool { return hint(a.ReadOnlyHint, false) }

// Destructive applies the MCP default (true, unless read-only) to an absent hint.
func (a Annotations) Destructive() bool { return !a.ReadOnly() && hint(a.DestructiveHint, true) }

// Idempotent applies the MCP default (false) to an absent hint.
func (a Annotations) Idempotent() bool { return hint(a.IdempotentHint, false) }

// OpenWorld applies the MCP default (true) to an absent hint.
func (a Annotations) OpenWorld() bool { return hint(a.OpenWorldHint, true) }

// Policy is a tool's policy.
type Policy struct {
	Mode             Mode
	StandingApproval bool
	Condition        string
	Version          int
	// MaxGrant is the longest a standing grant of the tool may last; zero
	// means no limit (until revoked or the policy changes).
	MaxGrant time.Duration
	// Matchable offers "Always allow calls like this" even where standing
	// approval is not offered (the default for shell tools).
	Matchable bool
	// Rule is who decides the tool's calls; DecidersCondition (CEL over
	// args, optional) chooses it per call (see ChooseRule).
	Rule              DeciderRule
	DecidersCondition string
	// Escalation names a backup team and a delay (approval/away.go).
	Escalation Escalation
}

// Blocks reports whether p refuses every call: the mode is block, or a
// mode this version does not know (which fails closed).
func (p Policy) Blocks() bool { return p.Mode != ModeAllow && p.Mode != ModeRequireApproval }

// DefaultPolicy is a new tool's policy: read-only tools are allowed;
// anything else requires approval, with standing approval offered unless the
// catalog says the tool moves data out (standing=false) or marks it
// destructive (see DefaultStanding).
func DefaultPolicy(a Annotations, standing *bool) Policy {
	if a.ReadOnly() {
		return Policy{Mode: ModeAllow, StandingApproval: true, Version: 1}
	}
	return Policy{Mode: ModeRequireApproval, StandingApproval: DefaultStanding(a, standing), Version: 1}
}
