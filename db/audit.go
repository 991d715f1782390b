package db

import (
	"context"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// RecordAudit appends ev to the audit log inside tx, so that the change it
// describes and its line commit together or not at all (invariant 10).
func RecordAudit(ctx context.Context, tx pgx.Tx, ev approval.AuditEvent) error {
	detail := ev.Detail
	if detail == nil {
		detail = map[string]any{}
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool,
			conversation_id, turn_id, playbook_id, run_id, approval_id, detail)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		ev.Actor.Kind, ev.Actor.ID, ev.Actor.Name, ev.Action, ev.Connector, ev.Tool,
		ev.ConversationID, ev.TurnID, ev.PlaybookID, ev.RunID, ev.ApprovalID, detail)
	return translate("record audit", err)
}

// AuditLine is one stored audit event.
type AuditLine struct {
	ID             int64          `db:"id"`
	At             time.Time      `db:"at"`
	ActorKind      string         `db:"actor_kind"`
	ActorID        string         `db:"actor_id"`
	ActorName      string         `db:"actor_name"`
	Action         string         `db:"action"`
	Connector      string         `db:"connector"`
	Tool           string         `db:"tool"`
	ConversationID string         `db:"conversation_id"`
	TurnID         string         `db:"turn_id"`
	PlaybookID     string         `db:"playbook_id"`
	RunID          string         `db:"run_id"`
	ApprovalID     string         `db:"approval_id"`
	Detail         map[string]any `db:"detail"`
}

// AuditFilter narrows ListAudit.
type AuditFilter struct {
	Action     string
	ApprovalID string
	Limit      int
}

// ListAudit returns audit lines, newest first.
func (d *DB) ListAudit(ctx context.Context, f AuditFilter) ([]AuditLine, error) {
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 100
	}
	rows, err := d.Pool.Query(ctx, `
		SELECT id, at, actor_kind, actor_id, actor_name, action, connector, tool, conversation_id,
			turn_id, playbook_id, run_id, approval_id, detail
		FROM audit_events
		WHERE ($1 = '' OR action = $1) AND ($2 = '' OR approval_id = $2)
		ORDER BY id DESC LIMIT $3`, f.Action, f.ApprovalID, f.Limit)
	if err != nil {
		return nil, translate("list audit", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowToStructByName[AuditLine])
	return lines, translate("list audit", err)
}
