package db

import (
	"context"
	"fmt"
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
	// ExpiresIn is how long the item had left when it was read, by the
	// database's clock (zero once due). Waits use it, never ExpiresAt
	// against this process's clock, which may disagree with the database's.
	ExpiresIn time.Duration `db:"expires_in"`
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
	a.runtime_client, a.runtime_host, a.runtime_working_directory, a.context_diff
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

// ApprovalForKey returns the item if key created it; any other key gets
// not found, as if it did not exist.
func (d *DB) ApprovalForKey(ctx context.Context, id string, key APIKey) (Approval, error) {
	var a Approval
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) (err error) {
		a, err = getApproval(ctx, tx, id, false)
		return err
	})
	if err == nil && a.APIKeyID != key.ID {
		err = approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such approval.")
	}
	return a, translate("get approval", err)
}

// ApprovalForOwner returns the item if subject owns it.
func (d *DB) ApprovalForOwner(ctx context.Context, id, subject string) (Approval, error) {
	var a Approval
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) (err error) {
		a, err = getApproval(ctx, tx, id, false)
		return err
	})
	if err == nil && a.OwnerSubject != subject {
		err = approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such approval.")
	}
	return a, translate("get approval", err)
}

// PendingLimit is the most pending items PendingFor lists; the inbox says
// when more wait.
const PendingLimit = 200

// PendingFor lists an owner's pending items, the one that expires first
// on top: the list is read in the order the answers are due, and a new item
// (which expires last) never pushes down the ones being read. Past
// PendingLimit, the ones that expire last are left out.
func (d *DB) PendingFor(ctx context.Context, subject string) ([]Approval, error) {
	list, err := collectApprovals(d.Pool.Query(ctx, approvalSelect+`
		WHERE a.owner_subject = $1 AND a.status = 'pending' AND a.expires_at > now()
		ORDER BY a.expires_at, a.created_at, a.id LIMIT $2`, subject, PendingLimit))
	return list, translate("list pending", err)
}

// RecentDecisionsFor lists an owner's last decided items, newest first.
func (d *DB) RecentDecisionsFor(ctx context.Context, subject string, limit int) ([]Approval, error) {
	list, err := collectApprovals(d.Pool.Query(ctx, approvalSelect+`
		WHERE a.owner_subject = $1 AND a.decided_at IS NOT NULL
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
		ConversationID: a.ConversationID, TurnID: a.TurnID, ApprovalID: a.ID, Detail: detail}
}

// Decide records a reviewer's decision: one conditional UPDATE, the grant
// it implies, its audit line and the notification, in one transaction. The
// reviewer comes from the session; only the owner may decide, anyone else
// gets not found. Of any number of concurrent decisions exactly one wins;
// each other one gets a conflict that says what became of the item, and the
// item as it is now (see lostDecision).
func (d *DB) Decide(ctx context.Context, id string, reviewer User, dec approval.Decision, reason string) (Approval, error) {
	return d.Answer(ctx, id, reviewer, Answer{Decision: dec, Reason: reason})
}

// Answer is what a reviewer posted: the decision, the text typed in the
// reason field, and for a standing decision how long it lasts (seconds as
// sent; "" for the longest the tool allows).
type Answer struct {
	Decision approval.Decision
	Reason   string
	Duration string
	// Scope is the person's choice within the proposed scope, for
	// "Always allow calls like this" (see approval.ChooseScope).
	Scope []string
	// BatchID names the batch the answer was given in (empty: alone); each
	// item of a batch is decided on its own, its audit line naming it.
	BatchID string
}

// Answer records a reviewer's answer as Decide does. A reason typed with an
// approval is kept as the reviewer's note (never passed to the model); a
// standing grant ends after the duration asked for, which may not exceed
// the tool's cap.
func (d *DB) Answer(ctx context.Context, id string, reviewer User, ans Answer) (Approval, error) {
	dec, reason := ans.Decision, ans.Reason
	var out Approval
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		a, err := getApproval(ctx, tx, id, false)
		if err != nil {
			return err
		}
		if a.OwnerSubject != reviewer.Subject {
			return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such approval.")
		}
		standing := dec == approval.ApproveConversation || dec == approval.AlwaysAllow || dec == approval.AlwaysMatching
		if !approval.Offered(dec, a.AvailableDecisions) {
			if standing {
				return errStandingNotOffered
			}
			return approval.Errorf(approval.KindUnprocessable, approval.CodeNotOffered, "That answer is not offered for this call.")
		}
		var length time.Duration
		if standing {
			if err := holdStandingOffered(ctx, tx, a.ToolID, dec); err != nil {
				return err
			}
			if length, err = grantLength(ctx, tx, a.ToolID, ans.Duration); err != nil {
				return err
			}
		}
		var sc chosenScope
		if dec == approval.AlwaysMatching {
			// Chosen from what the server proposes for the call as stored,
			// read before the decision forgets its full text.
			if sc, err = chooseScope(ctx, tx, a, ans.Scope); err != nil {
				return err
			}
		}
		status, scope := approval.StatusApproved, string(dec.Scope())
		if dec == approval.Reject {
			status = approval.StatusRejected
		}
		var scopeArg *string
		if status == approval.StatusApproved {
			scopeArg = &scope
		}
		tag, err := tx.Exec(ctx, `
			UPDATE approvals SET status = $2, scope = $3, reviewer_id = $4, reject_reason = $5, reviewer_note = $6, decided_at = now()
			WHERE id = $1 AND status = 'pending' AND expires_at > now() AND $7::text = ANY(available_decisions)
			  AND (NOT $8 OR EXISTS (SELECT 1 FROM tools t WHERE t.id = approvals.tool_id
				AND (t.standing_approval OR ($7 = 'always_matching' AND t.matchable))))`,
			id, string(status), scopeArg, reviewer.ID, rejectReason(dec, reason), reviewerNote(dec, reason), string(dec), standing)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			if err := notOfferedNow(ctx, tx, id, dec); err != nil {
				return err
			}
			out, err = lostDecision(ctx, tx, id, reviewer)
			return err
		}
		if standing {
			var conv *string
			if dec == approval.ApproveConversation {
				conv = &a.ConversationID
			}
			// The grant carries the policy version the person saw when asked.
			if _, err := tx.Exec(ctx, `INSERT INTO standing_grants (user_subject, tool_id, conversation_id, policy_version, approval_id,
					expires_at, scope, scope_words)
				VALUES ($1, $2, $3, $4, $5, CASE WHEN $6::bigint > 0 THEN now() + make_interval(secs => $6::bigint) END, $7, $8)`,
				a.OwnerSubject, a.ToolID, conv, a.PolicyVersion, a.ID, int64(length/time.Second), sc.data, sc.words); err != nil {
				return err
			}
		}
		if out, err = getApproval(ctx, tx, id, false); err != nil {
			return err
		}
		detail := map[string]any{}
		if dec == approval.Reject {
			detail["reason_given"] = out.RejectReason != ""
		}
		if out.ReviewerNote != "" {
			detail["note_given"] = true
		}
		if standing {
			detail["duration"] = approval.DurationWords(length)
		}
		if sc.data != nil {
			detail["scope_kind"], detail["scope"] = sc.scope.Kind(), sc.scope.Fingerprint()
		}
		if ans.BatchID != "" {
			detail["batch_id"] = ans.BatchID
		}
		if err := RecordAudit(ctx, tx, auditForApproval(out, reviewer.Actor(), decisionAction(dec), detail)); err != nil {
			return err
		}
		if err := outboxApproval(ctx, tx, EventApprovalDecided, out); err != nil {
			return err
		}
		return notify(ctx, tx, Change{ApprovalID: id, Owner: a.OwnerSubject})
	})
	return out, translate("decide approval", err)
}

// errStandingNotOffered refuses a standing answer for a tool that does not
// offer standing approval (now: an admin may have turned it off since the
// item was shown).
var errStandingNotOffered = approval.Errorf(approval.KindUnprocessable, approval.CodeNotOffered,
	"“Allow in this conversation” and “Always allow” are not offered for this tool: its policy does not allow standing approval. "+
		"Nothing was recorded; approve this call only, or reject it.")

// holdStandingOffered reads, as committed now, whether the tool offers
// standing approval, and holds its row (shared) until the decision
// commits: a policy change either committed first and is seen here, or
// waits for this decision. The tool is locked before the item, in the
// order UpdatePolicy and the check take them, so that none deadlocks.
func holdStandingOffered(ctx context.Context, tx pgx.Tx, toolID int64, dec approval.Decision) error {
	var offered bool
	err := tx.QueryRow(ctx, `SELECT standing_approval OR ($2 AND matchable) FROM tools WHERE id = $1 FOR SHARE`,
		toolID, dec == approval.AlwaysMatching).Scan(&offered)
	if err == nil && !offered {
		return errStandingNotOffered
	}
	return err
}

// notOfferedNow explains a decision whose UPDATE matched nothing because
// the answer is no longer offered (the item's buttons or the tool's policy
// changed since it was read), rather than because someone else decided.
func notOfferedNow(ctx context.Context, tx pgx.Tx, id string, dec approval.Decision) error {
	var offered, pending bool
	err := tx.QueryRow(ctx, `SELECT a.status = 'pending' AND a.expires_at > now(),
		$2::text = ANY(a.available_decisions) AND ($2::text NOT IN ('approve_conversation', 'always', 'always_matching')
			OR t.standing_approval OR ($2::text = 'always_matching' AND t.matchable))
		FROM approvals a JOIN tools t ON t.id = a.tool_id WHERE a.id = $1`, id, string(dec)).Scan(&pending, &offered)
	if err != nil {
		return err
	}
	if pending && !offered && (dec == approval.ApproveConversation || dec == approval.AlwaysAllow || dec == approval.AlwaysMatching) {
		return errStandingNotOffered
	}
	return nil
}

// lostDecision explains a decision whose conditional UPDATE matched
// nothing: it returns the item as it is now and the conflict naming what
// became of it. Why a second read: the read before the UPDATE may predate a
// concurrent winner (the UPDATE then waited for the winner's row lock and
// found the row no longer pending). Under READ COMMITTED this new statement
// sees every commit the UPDATE saw, and its now() is the UPDATE's, so
// "expired" is said only when the database's clock says so.
func lostDecision(ctx context.Context, tx pgx.Tx, id string, reviewer User) (Approval, error) {
	a, err := getApproval(ctx, tx, id, false)
	if err != nil {
		return Approval{}, err
	}
	status := a.Status
	if status == approval.StatusPending {
		if a.ExpiresIn > 0 {
			// Not decided, not due, yet the UPDATE matched nothing: say
			// nothing rather than guess; the call does not run either way.
			return Approval{}, fmt.Errorf("decision matched nothing on pending item %s", id)
		}
		status = approval.StatusExpired
	}
	by := ""
	if a.ReviewerID != nil {
		if *a.ReviewerID == reviewer.ID {
			by = "you"
		} else {
			rows, err := tx.Query(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, *a.ReviewerID)
			if err != nil {
				return Approval{}, err
			}
			u, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[User])
			if err != nil {
				return Approval{}, err
			}
			by = u.DisplayName()
		}
	}
	scope := approval.ScopeOnce
	if a.Scope != nil {
		scope = approval.Scope(*a.Scope)
	}
	return a, approval.LateDecision(status, scope, by)
}

// MaxRejectReason is the longest reason kept, in characters.
const MaxRejectReason = 500

func rejectReason(dec approval.Decision, reason string) string {
	if dec != approval.Reject {
		return ""
	}
	r := []rune(reason)
	if len(r) > MaxRejectReason {
		r = r[:MaxRejectReason]
	}
	return string(r)
}

// reviewerNote keeps what was typed in the reason field with an approval,
// as the reviewer's own note: a reason is never silently dropped.
func reviewerNote(dec approval.Decision, reason string) string {
	if dec == approval.Reject {
		return ""
	}
	return rejectReason(approval.Reject, reason)
}

func decisionAction(d approval.Decision) string {
	switch d {
	case approval.ApproveConversation:
		return approval.ActionApprovedConversation
	case approval.AlwaysAllow:
		return approval.ActionAlwaysAllowed
	case approval.AlwaysMatching:
		return approval.ActionAlwaysMatching
	case approval.Reject:
		return approval.ActionRejected
	}
	return approval.ActionApproved
}

// Claim turns an approved item into consumed, once, for the key that
// created it and only with the call id and digest that were shown. The
// tool's policy is read again in the same transaction: an admin's block
// wins over an approval given before it.
func (d *DB) Claim(ctx context.Context, key APIKey, id, callID, digest string) (Approval, error) {
	var out Approval
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		a, err := getApproval(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if a.APIKeyID != key.ID {
			return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such approval.")
		}
		blocked, err := toolBlocked(ctx, tx, a.ToolID)
		if err != nil {
			return err
		}
		switch {
		case a.Status == approval.StatusConsumed:
			return approval.Errorf(approval.KindConflict, approval.CodeConsumed, "This approval was already used; an approval runs one call once.")
		case a.Code() == approval.CodeBlockedByPolicy || (a.Status == approval.StatusApproved && blocked):
			return approval.Errorf(approval.KindConflict, string(approval.CodeBlockedByPolicy), "%s",
				approval.Message(approval.CodeBlockedByPolicy, approval.MessageInput{Tool: a.ToolDisplay}))
		case a.Status != approval.StatusApproved:
			return approval.Errorf(approval.KindConflict, approval.CodeNotApproved, "This call is not approved (%s), so it must not run.", a.Status)
		case a.CallID != callID || a.ArgumentsDigest != digest:
			return approval.Errorf(approval.KindConflict, approval.CodeCallMismatch, "The approval was given for a different call or different arguments, so this call must not run.")
		}
		if _, err := tx.Exec(ctx, `UPDATE approvals SET status = 'consumed', consumed_at = now() WHERE id = $1 AND status = 'approved'`, id); err != nil {
			return err
		}
		if out, err = getApproval(ctx, tx, id, false); err != nil {
			return err
		}
		if err := RecordAudit(ctx, tx, auditForApproval(out, key.Actor(), approval.ActionClaimed, nil)); err != nil {
			return err
		}
		return notify(ctx, tx, Change{ApprovalID: id, Owner: a.OwnerSubject})
	})
	return out, translate("claim approval", err)
}

// toolBlocked reads the tool's mode as committed now. It takes no lock on
// the tool: UpdatePolicy locks the tool and then the items, so a claim that
// holds an item and waited for the tool could deadlock with it. None is
// needed: a block that commits before the claim locks the item has already
// ended it, and one that commits later waited for the claim's row.
func toolBlocked(ctx context.Context, tx pgx.Tx, toolID int64) (bool, error) {
	var mode string
	if err := tx.QueryRow(ctx, `SELECT mode FROM tools WHERE id = $1`, toolID).Scan(&mode); err != nil {
		return false, err
	}
	return approval.Policy{Mode: approval.Mode(mode)}.Blocks(), nil
}

// SweepSessions deletes expired sessions.
func (d *DB) SweepSessions(ctx context.Context) (int64, error) {
	tag, err := d.Pool.Exec(ctx, `DELETE FROM sessions WHERE expiry < now()`)
	if err != nil {
		return 0, fmt.Errorf("db: sweep sessions: %w", err)
	}
	return tag.RowsAffected(), nil
}

// RemoveOldPreviews deletes the argument preview, the runtime's diff and
// the agent's reason of items decided more than retention ago, at most
// limit at a time; the digest, the size and the audit lines stay.
func (d *DB) RemoveOldPreviews(ctx context.Context, retention time.Duration, limit int) (int64, error) {
	tag, err := d.Pool.Exec(ctx, `UPDATE approvals SET preview = '{"parsed": false, "removed": true}'::jsonb, agent_reason = '',
		context_diff = CASE WHEN context_diff IS NULL THEN NULL ELSE '{"parsed": false, "removed": true, "length": 0}'::jsonb END,
		preview_removed_at = now()
		WHERE id IN (SELECT id FROM approvals WHERE preview_removed_at IS NULL AND decided_at IS NOT NULL
			AND decided_at < now() - $1::interval ORDER BY decided_at LIMIT $2)`, retention, limit)
	if err != nil {
		return 0, fmt.Errorf("db: remove old previews: %w", err)
	}
	return tag.RowsAffected(), nil
}
