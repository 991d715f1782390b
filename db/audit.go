package db

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// RecordAudit appends ev to the audit log inside tx, so that the change it
// describes and its line commit together or not at all (invariant 10). The
// event is stored unsealed; the sealer chains it after the commit (see
// SealAudit and migration 00010), so no request transaction waits for
// another's audit line.
func RecordAudit(ctx context.Context, tx execer, ev approval.AuditEvent) error {
	detail := ev.Detail
	if detail == nil {
		detail = map[string]any{}
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool,
			conversation_id, turn_id, playbook_id, run_id, approval_id, detail, owner_subject)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		ev.Actor.Kind, ev.Actor.ID, ev.Actor.Name, ev.Action, ev.Connector, ev.Tool,
		ev.ConversationID, ev.TurnID, ev.PlaybookID, ev.RunID, ev.ApprovalID, detail, ev.OwnerSubject)
	return translate("record audit", err)
}

// RecordAuditMany appends evs to the audit log inside tx in one statement
// (a sweep of hundreds of items costs one insert, not hundreds).
func RecordAuditMany(ctx context.Context, tx execer, evs []approval.AuditEvent) error {
	if len(evs) == 0 {
		return nil
	}
	cols := make([][]string, 13)
	for _, ev := range evs {
		detail := ev.Detail
		if detail == nil {
			detail = map[string]any{}
		}
		b, err := json.Marshal(detail)
		if err != nil {
			return translate("record audit", err)
		}
		for i, v := range []string{ev.Actor.Kind, ev.Actor.ID, ev.Actor.Name, ev.Action, ev.Connector, ev.Tool,
			ev.ConversationID, ev.TurnID, ev.PlaybookID, ev.RunID, ev.ApprovalID, string(b), ev.OwnerSubject} {
			cols[i] = append(cols[i], v)
		}
	}
	args := make([]any, len(cols))
	for i := range cols {
		args[i] = cols[i]
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool,
			conversation_id, turn_id, playbook_id, run_id, approval_id, detail, owner_subject)
		SELECT k, i, n, a, c, t, cv, tu, pb, r, ap, d::jsonb, o
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
			$7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[])
			WITH ORDINALITY AS u(k, i, n, a, c, t, cv, tu, pb, r, ap, d, o, ord)
		ORDER BY ord`, args...)
	return translate("record audit", err)
}

// AuditLine is one stored audit event.
type AuditLine struct {
	ID             int64          `db:"id"`
	Seq            int64          `db:"seq"`
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
	Hash           string         `db:"hash"`
	// OwnerSubject is whose agent made the call, on a line about a call.
	OwnerSubject string `db:"owner_subject"`
	// APIKeyID is the key whose agent made the call (the line's actor, or
	// the key of the item it is about); nil for other lines. The database
	// fills it (audit_event_key, migration 00031).
	APIKeyID *int64 `db:"api_key_id"`
}

// Sealed says whether the line has its place in the chain yet: lines are
// sealed shortly after their commit (Seq and Hash are empty until then).
func (l AuditLine) Sealed() bool { return l.Seq > 0 }

// AuditFilter narrows the audit log. Every field is optional.
type AuditFilter struct {
	Actions      []string
	Actor        string // actor id or name, exact
	Connector    string
	Tool         string
	Conversation string
	ApprovalID   string
	From, To     time.Time // [From, To)
	Before       int64     // keyset: ids below (older)
	After        int64     // keyset: ids above (newer)
	Limit        int
}

// auditColumns are an audit line's columns, its seal (audit_chain c, joined
// by the caller) included: seq 0 and hash "" until it is sealed.
const auditColumns = `e.id, COALESCE(c.seq, 0) AS seq, at, actor_kind, actor_id, actor_name, action, connector, tool, conversation_id,
	turn_id, playbook_id, run_id, approval_id, detail, COALESCE(c.hash, '') AS hash, owner_subject, api_key_id`

// where builds the filter's conditions; keyset bounds are added by the caller.
func (f AuditFilter) where() (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	switch len(f.Actions) {
	case 0:
	case 1: // equality lets the (action, id) index give the order too
		add("action = ?", f.Actions[0])
	default:
		add("action = ANY(?)", f.Actions)
	}
	if f.Actor != "" {
		add("(actor_id = ? OR actor_name = ?)", f.Actor)
	}
	if f.Connector != "" {
		add("connector = ?", f.Connector)
	}
	if f.Tool != "" {
		add("tool = ?", f.Tool)
	}
	if f.Conversation != "" {
		add("conversation_id = ?", f.Conversation)
	}
	if f.ApprovalID != "" {
		add("approval_id = ?", f.ApprovalID)
	}
	if !f.From.IsZero() {
		add("at >= ?", f.From)
	}
	if !f.To.IsZero() {
		add("at < ?", f.To)
	}
	if len(conds) == 0 {
		return "true", args
	}
	return strings.Join(conds, " AND "), args
}

// AuditPage is one page of the audit log, newest first.
type AuditPage struct {
	Lines    []AuditLine
	HasOlder bool
	HasNewer bool
	OldestID int64
	NewestID int64
}

// ListAudit returns one page of lines matching f, newest first, paged by
// keyset on id (no OFFSET: a deep page costs what the first one does).
func (d *DB) ListAudit(ctx context.Context, f AuditFilter) (AuditPage, error) {
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 50
	}
	where, args := f.where()
	order := "DESC"
	switch {
	case f.After > 0:
		args = append(args, f.After)
		where += " AND id > $" + strconv.Itoa(len(args))
		order = "ASC"
	case f.Before > 0:
		args = append(args, f.Before)
		where += " AND id < $" + strconv.Itoa(len(args))
	}
	args = append(args, f.Limit+1)
	rows, err := d.Pool.Query(ctx, `SELECT `+auditColumns+` FROM audit_events e LEFT JOIN audit_chain c ON c.event_id = e.id
		WHERE `+where+` ORDER BY e.id `+order+` LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return AuditPage{}, translate("list audit", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowToStructByName[AuditLine])
	if err != nil {
		return AuditPage{}, translate("list audit", err)
	}
	more := len(lines) > f.Limit
	if more {
		lines = lines[:f.Limit]
	}
	if order == "ASC" { // back to newest first
		for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
			lines[i], lines[j] = lines[j], lines[i]
		}
	}
	p := AuditPage{Lines: lines}
	if len(lines) > 0 {
		p.NewestID, p.OldestID = lines[0].ID, lines[len(lines)-1].ID
		if order == "ASC" {
			p.HasNewer, p.HasOlder = more, true
		} else {
			p.HasOlder, p.HasNewer = more, f.Before > 0
		}
	}
	return p, nil
}

// StreamAudit calls fn for every line matching f, newest first, reading in
// keyset batches so memory stays constant at any size.
func (d *DB) StreamAudit(ctx context.Context, f AuditFilter, fn func(AuditLine) error) error {
	f.After, f.Limit = 0, 1000
	for {
		page, err := d.ListAudit(ctx, f)
		if err != nil {
			return err
		}
		for _, l := range page.Lines {
			if err := fn(l); err != nil {
				return err
			}
		}
		if !page.HasOlder || len(page.Lines) == 0 {
			return nil
		}
		f.Before = page.OldestID
	}
}

// LatestAudit returns the newest sealed event's position and hash, and how
// many committed events are not sealed yet.
func (d *DB) LatestAudit(ctx context.Context) (seq int64, hash string, unsealed int64, err error) {
	err = d.Pool.QueryRow(ctx, `SELECT COALESCE(h.seq, 0), COALESCE(h.hash, ''), (SELECT count(*) FROM audit_unsealed)
		FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT seq, hash FROM audit_chain ORDER BY seq DESC LIMIT 1) h ON true`).
		Scan(&seq, &hash, &unsealed)
	return seq, hash, unsealed, translate("latest audit", err)
}

// AuditToolName is a tool as the audit screen names it: every tool ever
// synced (retired ones and those of deleted connectors too, since their
// lines stay), with the display names of the tool and its connector.
type AuditToolName struct {
	Connector        string `db:"connector"`
	Tool             string `db:"tool"`
	ToolDisplay      string `db:"tool_display"`
	ConnectorDisplay string `db:"connector_display"`
	ConnectorKind    string `db:"connector_kind"`
}

// AuditToolNames lists every tool for the audit screen's lists, by
// connector then tool display name.
func (d *DB) AuditToolNames(ctx context.Context) ([]AuditToolName, error) {
	rows, err := d.Pool.Query(ctx, `SELECT t.connector, t.name AS tool, t.display_name AS tool_display,
		c.display_name AS connector_display, c.kind AS connector_kind
		FROM tools t JOIN connectors c ON c.name = t.connector
		ORDER BY c.kind = 'builtin', c.display_name, t.display_name, t.name`)
	if err != nil {
		return nil, translate("audit tool names", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AuditToolName])
	return list, translate("audit tool names", err)
}
