package db

import (
	"context"
	"encoding/json"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// Notification event kinds: what the outbox records and what webhooks
// subscribe to.
const (
	EventApprovalRequested = "approval.requested"
	EventApprovalDecided   = "approval.decided"
	EventApprovalExpired   = "approval.expired"
	EventApprovalCancelled = "approval.cancelled"
	EventPreapprovalLapsed = "preapproval.lapsed"
	EventPolicyChanged     = "policy.changed"
	// EventAuditCheckpoint carries a signed checkpoint of the audit chain,
	// so that a copy lives outside the database (detail "checkpoint").
	EventAuditCheckpoint = "audit.checkpoint"
	// EventTest is an admin's "Send test event"; it goes to one webhook.
	EventTest = "test"
)

// EventKinds are the kinds a webhook can subscribe to, in display order.
var EventKinds = []string{EventApprovalRequested, EventApprovalEscalated, EventApprovalDecided, EventApprovalExpired,
	EventApprovalCancelled, EventPreapprovalLapsed, EventPolicyChanged, EventAuditCheckpoint}

// NotificationEvent is one row of the outbox: a committed change that
// people or systems may be told about. It never holds argument contents
// or free text an agent or reviewer wrote.
type NotificationEvent struct {
	ID         int64          `db:"id"`
	Kind       string         `db:"kind"`
	ApprovalID *string        `db:"approval_id"`
	Owner      string         `db:"owner_subject"`
	Connector  string         `db:"connector"`
	Tool       string         `db:"tool"`
	PlaybookID string         `db:"playbook_id"`
	Detail     map[string]any `db:"detail"`
	CreatedAt  time.Time      `db:"created_at"`
}

// RecordEvent writes ev to the outbox inside tx and announces it. Why an
// outbox written in the change's own transaction: the row exists exactly
// when the change committed — a rolled-back item is never announced — and
// it outlives the process, so any instance delivers it, after a restart
// too. The NOTIFY (sent at commit) only wakes the pipelines early; a
// periodic sweep finds anything a lost notification missed.
func RecordEvent(ctx context.Context, tx execer, ev NotificationEvent) error {
	if err := recordEvents(ctx, tx, []NotificationEvent{ev}); err != nil {
		return err
	}
	return notifyOutbox(ctx, tx)
}

// recordEvents writes evs to the outbox inside tx in one statement; the
// caller announces them.
func recordEvents(ctx context.Context, tx execer, evs []NotificationEvent) error {
	cols := make([][]any, 7)
	for _, ev := range evs {
		if ev.Detail == nil {
			ev.Detail = map[string]any{}
		}
		detail, err := json.Marshal(ev.Detail)
		if err != nil {
			return err
		}
		for c, v := range []any{ev.Kind, ev.ApprovalID, ev.Owner, ev.Connector, ev.Tool, ev.PlaybookID, string(detail)} {
			cols[c] = append(cols[c], v)
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO notification_events (kind, approval_id, owner_subject, connector, tool, playbook_id, detail)
		SELECT k, a::uuid, o, c, t, p, d::jsonb FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
			$6::text[], $7::text[]) WITH ORDINALITY AS u(k, a, o, c, t, p, d, ord) ORDER BY ord`,
		cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6])
	return err
}

// notifyOutbox wakes the pipelines at commit. Postgres folds identical
// notifications of one transaction into one.
func notifyOutbox(ctx context.Context, tx execer) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, OutboxChannel)
	return err
}

// outboxApproval records an event about item a: requested, decided,
// expired or cancelled.
func outboxApproval(ctx context.Context, tx execer, kind string, a Approval) error {
	return RecordEvent(ctx, tx, approvalEvent(kind, a))
}

// approvalEvent is the event kind about item a.
func approvalEvent(kind string, a Approval) NotificationEvent {
	detail := map[string]any{"status": string(a.Status)}
	if a.Scope != nil {
		detail["scope"] = *a.Scope
	}
	if code := a.Code(); code != "" {
		detail["code"] = string(code)
	}
	id := a.ID
	return NotificationEvent{Kind: kind, ApprovalID: &id, Owner: a.OwnerSubject,
		Connector: a.Connector, Tool: a.Tool, Detail: detail}
}

// outboxEnded records the event of an item that settle ended.
func outboxEnded(ctx context.Context, tx pgx.Tx, a Approval) error {
	kind := EventApprovalCancelled
	if a.Status == approval.StatusExpired {
		kind = EventApprovalExpired
	}
	return outboxApproval(ctx, tx, kind, a)
}

// outboxPolicyChanged records that tool t's policy changed.
func outboxPolicyChanged(ctx context.Context, tx pgx.Tx, t Tool) error {
	return RecordEvent(ctx, tx, NotificationEvent{Kind: EventPolicyChanged, Connector: t.Connector, Tool: t.Name,
		Detail: map[string]any{"tool_id": t.ID, "mode": t.Mode, "version": t.PolicyVersion}})
}

// outboxPreapprovalLapsed records that a playbook's pre-approval of a tool
// lapsed, and why.
func outboxPreapprovalLapsed(ctx context.Context, tx pgx.Tx, playbook, connector, tool, reason string) error {
	return RecordEvent(ctx, tx, NotificationEvent{Kind: EventPreapprovalLapsed, PlaybookID: playbook,
		Connector: connector, Tool: tool, Detail: map[string]any{"reason": reason}})
}
