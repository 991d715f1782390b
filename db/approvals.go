package db

import (
	"context"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// Approval is one pending item and what became of it.
type Approval struct {
	ID                 string                   `db:"id"`
	OwnerSubject       string                   `db:"owner_subject"`
	APIKeyID           int64                    `db:"api_key_id"`
	ConversationID     string                   `db:"conversation_id"`
	ConversationTitle  string                   `db:"conversation_title"`
	TurnID             string                   `db:"turn_id"`
	CallID             string                   `db:"call_id"`
	ToolID             int64                    `db:"tool_id"`
	Connector          string                   `db:"connector"`
	Tool               string                   `db:"tool"`
	ArgumentsDigest    string                   `db:"arguments_digest"`
	ArgumentsSize      int                      `db:"arguments_size"`
	Preview            approval.ArgumentPreview `db:"preview"`
	AgentReason        string                   `db:"agent_reason"`
	AvailableDecisions []string                 `db:"available_decisions"`
	PolicyVersion      int                      `db:"policy_version"`
	Status             approval.Status          `db:"status"`
	Scope              *string                  `db:"scope"`
	ReviewerID         *int64                   `db:"reviewer_id"`
	RejectReason       string                   `db:"reject_reason"`
	ReviewerNote       string                   `db:"reviewer_note"` // typed while approving; never sent to the model
	CreatedAt          time.Time                `db:"created_at"`
	ExpiresAt          time.Time                `db:"expires_at"`
	DecidedAt          *time.Time               `db:"decided_at"`
	ConsumedAt         *time.Time               `db:"consumed_at"`
	EndCode            *string                  `db:"end_code"` // why it ended, when the status alone does not say
	ToolDisplay        string                   `db:"tool_display"`
	ConnectorDisplay   string                   `db:"connector_display"`
	ConnectorKind      string                   `db:"connector_kind"`
	ReadOnlyHint       *bool                    `db:"read_only_hint"`
	DestructiveHint    *bool                    `db:"destructive_hint"`
	OpenWorldHint      *bool                    `db:"open_world_hint"`
	ToolMaxGrant       *int64                   `db:"tool_max_grant_seconds"` // the tool's cap on standing grants, in seconds; nil: none
	// APIKeyName is the name of the key that asked ("" if it is gone).
	APIKeyName string `db:"api_key_name"`
	// Runtime is what the runtime said about itself with the check.
	RuntimeClient    string `db:"runtime_client"`
	RuntimeHost      string `db:"runtime_host"`
	RuntimeDirectory string `db:"runtime_working_directory"`
	// Diff is the preview of the diff the runtime computed; nil when it
	// sent none.
	Diff *approval.DiffPreview `db:"context_diff"`
	// Escalation is the rule snapshotted when the item was created (team
	// and delay; "" when none), and when it escalated (nil: not yet).
	EscalateTo           string     `db:"escalate_to"`
	EscalateAfterSeconds *int32     `db:"escalate_after_seconds"`
	EscalatedAt          *time.Time `db:"escalated_at"`
	// ExpiresIn is how long the item had left when it was read, by the
	// database's clock (zero once due). Waits use it, never ExpiresAt
	// against this process's clock, which may disagree with the database's.
	ExpiresIn time.Duration `db:"expires_in"`
	// Passkey step-up (issue 33): the proof approving the item needs, and
	// the name of the passkey that approved it ("" if none did).
	ProofRequired approval.Proof `db:"proof_required"`
	ProofPasskey  string         `db:"proof_passkey"`
	// Deciders, DeciderTeam and Quorum are the approver rule chosen for the
	// item when it was created; OwnerTeam is the team of a service agent's
	// key (then OwnerSubject is ""). ApprovalsIn counts a quorum's
	// approvals so far, as castVote counts them: of people who may still
	// decide in their own right, and with a passkey once the item needs one.
	Deciders    string `db:"deciders"`
	DeciderTeam string `db:"decider_team"`
	Quorum      int    `db:"quorum"`
	OwnerTeam   string `db:"owner_team"`
	ApprovalsIn int    `db:"approvals_in"`
	// DecidedBy names who approved a claimed item (set by Claim only).
	DecidedBy []string `db:"-"`
}

// Rule is the approver rule the item was created under.
func (a Approval) Rule() approval.DeciderRule {
	return approval.DeciderRule{Deciders: approval.Deciders(a.Deciders), Team: a.DeciderTeam, Quorum: a.Quorum}.Normal()
}

// Annotations are the tool's hints at read time.
func (a Approval) Annotations() approval.Annotations {
	return approval.Annotations{ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint}
}

// MaxGrant is the tool's cap on standing grants as read with the item; zero
// means no limit.
func (a Approval) MaxGrant() time.Duration {
	if a.ToolMaxGrant == nil {
		return 0
	}
	return time.Duration(*a.ToolMaxGrant) * time.Second
}

// Code is the reason code of a settled, not-approved item: the one stored
// when it ended (an admin's block), else the one its status implies.
func (a Approval) Code() approval.ReasonCode {
	if a.EndCode != nil {
		return approval.ReasonCode(*a.EndCode)
	}
	return approval.CodeForStatus(a.Status)
}

// Message is the model-facing message of a settled, not-approved item.
func (a Approval) Message() string {
	code := a.Code()
	if code == "" {
		return ""
	}
	return approval.Message(code, approval.MessageInput{Tool: a.ToolDisplay, UserReason: a.RejectReason})
}

const approvalSelect = `SELECT a.id::text AS id, a.owner_subject, a.api_key_id, a.conversation_id, a.conversation_title, a.turn_id, a.call_id,
	a.tool_id, a.connector, a.tool, a.arguments_digest, a.arguments_size, a.preview, a.agent_reason,
	a.available_decisions, a.policy_version, a.status, a.scope, a.reviewer_id, a.reject_reason, a.reviewer_note, a.created_at,
	a.expires_at, a.decided_at, a.consumed_at, a.end_code, s.tool_display_shown AS tool_display,
	s.connector_display_shown AS connector_display, s.connector_kind_shown AS connector_kind,
	s.read_only_hint_shown AS read_only_hint, s.destructive_hint_shown AS destructive_hint,
	s.open_world_hint_shown AS open_world_hint, t.max_grant_seconds AS tool_max_grant_seconds,
	GREATEST(a.expires_at - now(), interval '0') AS expires_in, COALESCE(k.name, '') AS api_key_name,
	a.runtime_client, a.runtime_host, a.runtime_working_directory, a.context_diff,
	a.proof_required, COALESCE((SELECT string_agg(p.name, ', ' ORDER BY r.id) FROM approval_receipts r
		JOIN passkeys p ON p.id = r.passkey_id WHERE r.approval_id = a.id), '') AS proof_passkey,
	a.deciders, COALESCE(a.decider_team, '') AS decider_team, a.quorum, COALESCE(a.owner_team, '') AS owner_team,
	CASE WHEN a.deciders = 'quorum' THEN (SELECT count(*) FROM approval_votes v
		WHERE v.approval = a.id AND countersign_vote_counts(a, v))::int ELSE 0 END AS approvals_in,
	a.escalate_to, a.escalate_after_seconds, a.escalated_at
	FROM approvals a JOIN tools t ON t.id = a.tool_id JOIN connectors c ON c.name = a.connector
	LEFT JOIN api_keys k ON k.id = a.api_key_id
	CROSS JOIN LATERAL (SELECT COALESCE(a.shown_tool_display, t.display_name) AS tool_display_shown,
		COALESCE(a.shown_connector_display, c.display_name) AS connector_display_shown,
		COALESCE(a.shown_connector_kind, c.kind) AS connector_kind_shown,
		CASE WHEN a.shown_hints_taken THEN a.shown_read_only_hint ELSE t.read_only_hint END AS read_only_hint_shown,
		CASE WHEN a.shown_hints_taken THEN a.shown_destructive_hint ELSE t.destructive_hint END AS destructive_hint_shown,
		CASE WHEN a.shown_hints_taken THEN a.shown_open_world_hint ELSE t.open_world_hint END AS open_world_hint_shown) s`

func collectApprovals(rows pgx.Rows, err error) ([]Approval, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[Approval])
}

func getApproval(ctx context.Context, q pgx.Tx, id string, lock bool) (Approval, error) {
	sql := approvalSelect + ` WHERE a.id = $1`
	if lock {
		sql += ` FOR UPDATE OF a`
	}
	list, err := collectApprovals(q.Query(ctx, sql, id))
	if err != nil {
		return Approval{}, err
	}
	if len(list) == 0 {
		return Approval{}, approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such approval.")
	}
	return list[0], nil
}

// ApprovalForKey returns the item if key created it or joined it as the
// second guard of the same call (joinedView); any other key gets not found,
// as if it did not exist.
func (d *DB) ApprovalForKey(ctx context.Context, id string, key APIKey) (Approval, error) {
	var a Approval
	var joined bool
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) (err error) {
		if a, err = getApproval(ctx, tx, id, false); err != nil {
			return err
		}
		a, _, joined, err = joinedView(ctx, tx, a, key)
		return err
	})
	if err == nil && a.APIKeyID != key.ID && !joined {
		err = approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such approval.")
	}
	return a, translate("get approval", err)
}

// mayDecideSQL is the one rule of who may see and decide an item (the
// migration's countersign_may_decide, over approvalSelect's row a and the
// viewer's subject): every read that shows items to a person filters by it.
func mayDecideSQL(viewer string) string { return `countersign_may_decide(a, ` + viewer + `)` }

// mayDecideListSQL is mayDecideSQL for lists over many items: it first
// keeps the items the viewer could possibly decide — owned by the viewer
// or by someone they stand in for, or routed to one of those people's
// teams (migration 00030) — which indexes answer, so that the predicate
// runs on those alone. It never adds an item the predicate refuses.
func mayDecideListSQL(viewer string) string {
	// ANY(ARRAY(…)) reads each set once and lets each column's index
	// answer its arm.
	people := `ANY(ARRAY(SELECT countersign_viewer_people(` + viewer + `)))`
	teams := `ANY(ARRAY(SELECT countersign_viewer_teams(` + viewer + `)))`
	return `(a.owner_subject = ` + people + ` OR a.decider_team = ` + teams + `
		OR a.owner_team = ` + teams + ` OR a.escalate_to = ` + teams + `)
		AND ` + mayDecideSQL(viewer)
}

// mayDecidePendingSQL is mayDecideSQL for lists of waiting items: it
// takes the items the maintained "who may decide" rows (pending_deciders,
// migration 00033) give the viewer and the people who named the viewer
// their delegate now, so that a read touches the viewer's rows alone
// however many items wait for others, and asks the predicate of those
// only. The rows never add an item the predicate refuses.
func mayDecidePendingSQL(viewer string) string {
	// ANY(ARRAY(…)) reads the rows first, once, and the items by their
	// key: the predicate never runs on an item of someone else.
	return `a.id = ANY(ARRAY(SELECT pd.approval_id FROM pending_deciders pd
		WHERE pd.subject = ANY(ARRAY(SELECT countersign_viewer_people(` + viewer + `)))))
		AND ` + mayDecideSQL(viewer)
}

// ApprovalForViewer returns the item if subject may decide it (its owner,
// or whoever its approver rule names); anyone else gets not found, as if
// it did not exist.
func (d *DB) ApprovalForViewer(ctx context.Context, id, subject string) (Approval, error) {
	list, err := collectApprovals(d.Pool.Query(ctx, approvalSelect+` WHERE a.id = $1 AND `+mayDecideSQL("$2"), id, subject))
	if err == nil && len(list) == 0 {
		err = approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such approval.")
	}
	if err != nil {
		return Approval{}, translate("get approval", err)
	}
	return list[0], nil
}

// DecidersOf lists the people (subjects of signed-in users) who may decide
// item id, for its notifications: the same rule every screen uses.
func (d *DB) DecidersOf(ctx context.Context, id string) ([]string, error) {
	m, err := d.DecidersOfMany(ctx, []string{id})
	return m[id], err
}

// DecidersOfMany is DecidersOf for several items in one statement (the
// notifications planned together): each id that names an item maps to its
// deciders, in subject order, nil when nobody may decide it.
func (d *DB) DecidersOfMany(ctx context.Context, ids []string) (map[string][]string, error) {
	out := make(map[string][]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := d.Pool.Query(ctx, `SELECT a.id::text, u.subject FROM approvals a LEFT JOIN users u ON `+mayDecideSQL("u.subject")+`
		WHERE a.id = ANY($1::uuid[]) GROUP BY a.id, u.subject ORDER BY a.id, u.subject`, ids)
	if err != nil {
		return nil, translate("deciders", err)
	}
	var id string
	var subject *string
	_, err = pgx.ForEachRow(rows, []any{&id, &subject}, func() error {
		if subject == nil {
			out[id] = nil
		} else {
			out[id] = append(out[id], *subject)
		}
		return nil
	})
	if err != nil {
		return nil, translate("deciders", err)
	}
	return out, nil
}

// PendingLimit is the most pending items PendingFor lists; the inbox says
// when more wait.
const PendingLimit = 200

// PendingFor lists the pending items subject may decide, the one that expires first
// on top: the list is read in the order the answers are due, and a new item
// (which expires last) never pushes down the ones being read. Past
// PendingLimit, the ones that expire last are left out. The order is by an
// expression no index gives, so that Postgres reads the viewer's items by
// their ids and sorts those few, rather than walking every waiting item in
// expiry order until it has found the viewer's.
func (d *DB) PendingFor(ctx context.Context, subject string) ([]Approval, error) {
	list, err := collectApprovals(d.Pool.Query(ctx, approvalSelect+`
		WHERE a.status = 'pending' AND a.expires_at > now() AND `+mayDecidePendingSQL("$1")+`
		ORDER BY a.expires_at + interval '0', a.created_at, a.id LIMIT $2`, subject, PendingLimit))
	return list, translate("list pending", err)
}

// RecentDecisionsFor lists the last decided items subject may decide,
// newest first.
func (d *DB) RecentDecisionsFor(ctx context.Context, subject string, limit int) ([]Approval, error) {
	list, err := collectApprovals(d.Pool.Query(ctx, approvalSelect+`
		WHERE a.decided_at IS NOT NULL AND `+mayDecideListSQL("$1")+`
		ORDER BY a.decided_at DESC, a.id LIMIT $2`, subject, limit))
	return list, translate("list recent decisions", err)
}

// auditForApproval is an audit line about item a. It names the key whose
// agent asked (agent_key), so that every line of an item says who asked.
func auditForApproval(a Approval, actor approval.Actor, action string, detail map[string]any) approval.AuditEvent {
	if a.APIKeyName != "" {
		d := make(map[string]any, len(detail)+1)
		for k, v := range detail {
			d[k] = v
		}
		d["agent_key"] = a.APIKeyName
		detail = d
	}
	return approval.AuditEvent{Actor: actor, Action: action, Connector: a.Connector, Tool: a.Tool,
		ConversationID: a.ConversationID, TurnID: a.TurnID, ApprovalID: a.ID, OwnerSubject: a.OwnerSubject, Detail: detail}
}
