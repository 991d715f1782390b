package approval

// Actor is who caused an audit event.
type Actor struct {
	Kind string // ActorUser, ActorAPIKey or ActorSystem
	ID   string
	Name string
}

// Actor kinds.
const (
	ActorUser   = "user"
	ActorAPIKey = "api_key"
	ActorSystem = "system"
)

// SystemActor is the actor of sweeps and other automatic changes.
var SystemActor = Actor{Kind: ActorSystem, ID: "system", Name: "system"}

// Audit actions. The words are the audit screen's words.
const (
	ActionSignIn        = "sign-in"
	ActionSignOut       = "sign-out"
	ActionAPIKeyCreated = "api key created"
	ActionAPIKeyRevoked = "api key revoked"
	ActionAPIKeyChanged = "api key changed" // a key's settings (first-time users)
	// ActionAPIKeyRenamed is a key renamed by migration 00031, which made
	// key names unique per owner.
	ActionAPIKeyRenamed        = "api key renamed"
	ActionApproved             = "approved"
	ActionApprovedConversation = "approved for conversation"
	ActionAlwaysAllowed        = "always allowed"
	ActionRejected             = "rejected"
	ActionExpired              = "expired"
	ActionCancelled            = "cancelled"
	ActionAutoApprovedConv     = "auto-approved by conversation grant"
	ActionAutoApprovedAlways   = "auto-approved by Always allow"
	ActionAutoApprovedScoped   = "auto-approved by a scoped grant"
	ActionAlwaysMatching       = "always allowed calls like this"
	ActionBlockedRepeated      = "blocked after repeated rejections"
	ActionBlockedByPolicy      = "blocked by policy"
	ActionClaimed              = "claimed"
	// ActionJoined: a second Countersign guard of the same call (a hook
	// and the MCP gateway) joined the first guard's item instead of
	// asking again (invariant 18); the line names the second guard.
	ActionJoined               = "joined by another guard"
	ActionRequested            = "approval requested"
	ActionConnectorSynced      = "connector synced"
	ActionConnectorDeleted     = "connector deleted"
	ActionToolRegistered       = "tool registered"
	ActionGrantRevoked         = "grant revoked"
	ActionPolicyChanged        = "policy changed"
	ActionPlaybookRegistered   = "playbook registered"
	ActionPlaybookUpdated      = "playbook updated"
	ActionPlaybookEnabled      = "playbook enabled"
	ActionPlaybookDisabled     = "playbook disabled"
	ActionPreapprovalGranted   = "pre-approval granted"
	ActionPreapprovalRevoked   = "pre-approval revoked"
	ActionPreapprovalLapsed    = "pre-approval lapsed"
	ActionRunStarted           = "playbook run started"
	ActionRunRefused           = "playbook run refused"
	ActionRefusedInRun         = "refused in unattended run"
	ActionAllowedByPreapproval = "allowed by pre-approval"
	// ActionAllowedByPolicy is a call its tool's policy allowed without
	// asking (the mode is allow, or the condition was false for the call).
	ActionAllowedByPolicy = "allowed by policy"
)

// AuditEvent is one line of the audit log. It never carries argument
// contents or tokens.
type AuditEvent struct {
	Actor          Actor
	Action         string
	Connector      string
	Tool           string
	ConversationID string
	TurnID         string
	PlaybookID     string
	RunID          string
	ApprovalID     string
	// OwnerSubject is the person whose agent made the call (the
	// conversation's owner), on the lines about a call; empty otherwise.
	OwnerSubject string
	Detail       map[string]any
}

// AllActions lists every audit action, for the audit screen's filter.
var AllActions = []string{
	ActionRequested, ActionApproved, ActionApprovedConversation, ActionAlwaysAllowed, ActionAlwaysMatching, ActionRejected,
	ActionExpired, ActionCancelled, ActionClaimed, ActionJoined, ActionAutoApprovedConv, ActionAutoApprovedAlways, ActionAutoApprovedScoped,
	ActionBlockedRepeated,
	ActionBlockedByPolicy, ActionGrantRevoked, ActionGrantExpired, ActionPolicyChanged, ActionConnectorSynced, ActionConnectorDeleted, ActionToolRegistered,
	ActionPlaybookRegistered, ActionPlaybookUpdated, ActionPlaybookEnabled, ActionPlaybookDisabled,
	ActionPreapprovalGranted, ActionPreapprovalRevoked, ActionPreapprovalLapsed, ActionRunStarted, ActionRunRefused,
	ActionAllowedByPreapproval, ActionRefusedInRun, ActionAllowedByPolicy, ActionAPIKeyCreated, ActionAPIKeyRevoked, ActionAPIKeyChanged, ActionAPIKeyRenamed, ActionSignIn, ActionSignOut,
	// Passkeys and step-up approvals (ProofActions).
	ActionProofRefused, ActionPasskeyAdded, ActionPasskeyRemoved, ActionPasskeysReset,
	ActionTeamCreated, ActionTeamChanged, ActionTeamMemberAdded, ActionTeamMemberRemoved,
	ActionEscalated, ActionDelegationStarted, ActionDelegationEnded,
}

// Audit actions of teams (who decides). A team's membership from the
// identity provider changes at sign-in and is noted on the sign-in line.
const (
	ActionTeamCreated       = "team created"
	ActionTeamChanged       = "team changed"
	ActionTeamMemberAdded   = "team member added"
	ActionTeamMemberRemoved = "team member removed"
)
