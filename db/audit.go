package db

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// RecordAudit appends ev to the audit log inside tx, so that the change it
// describes and its line commit together or not at all (invariant 10). The
// database chains it to the previous event (see migration 00004).
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
}

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

const auditColumns = `id, seq, at, actor_kind, actor_id, actor_name, action, connector, tool, conversation_id,
	turn_id, playbook_id, run_id, approval_id, detail, hash`

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
	rows, err := d.Pool.Query(ctx, `SELECT `+auditColumns+` FROM audit_events WHERE `+where+
		` ORDER BY id `+order+` LIMIT $`+strconv.Itoa(len(args)), args...)
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

// ChainReport is the result of walking the audit chain.
type ChainReport struct {
	Events   int64
	Intact   bool
	BrokenAt int64  // seq of the first broken link
	Problem  string // what is wrong there
	LastHash string
}

// String is the report in words.
func (r ChainReport) String() string {
	if r.Intact {
		return fmt.Sprintf("%d events, chain intact (last hash %s)", r.Events, short(r.LastHash))
	}
	return fmt.Sprintf("chain broken at event %d: %s (%d events read)", r.BrokenAt, r.Problem, r.Events)
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16] + "…"
	}
	return h
}

// VerifyAudit walks the chain in order, recomputing each event's hash, and
// reports the first broken link: an altered event, a missing one, or one
// whose previous-hash does not match.
func (d *DB) VerifyAudit(ctx context.Context) (ChainReport, error) {
	rows, err := d.Pool.Query(ctx, `SELECT e.seq, e.prev_hash, e.hash, audit_event_hash(e.prev_hash, e) FROM audit_events e ORDER BY e.seq`)
	if err != nil {
		return ChainReport{}, translate("verify audit", err)
	}
	defer rows.Close()
	r := ChainReport{Intact: true}
	prev := strings.Repeat("0", 64)
	var want int64 = 1
	for rows.Next() {
		var seq int64
		var prevHash, hash, recomputed string
		if err := rows.Scan(&seq, &prevHash, &hash, &recomputed); err != nil {
			return ChainReport{}, translate("verify audit", err)
		}
		r.Events++
		switch {
		case !r.Intact:
			continue
		case seq != want:
			r.Intact, r.BrokenAt, r.Problem = false, want, fmt.Sprintf("event %d is missing (next is %d)", want, seq)
		case prevHash != prev:
			r.Intact, r.BrokenAt, r.Problem = false, seq, "its link to the previous event does not match (an event before it was changed or removed)"
		case recomputed != hash:
			r.Intact, r.BrokenAt, r.Problem = false, seq, "its content does not match its hash (the event was altered)"
		}
		prev, want = hash, seq+1
		r.LastHash = hash
	}
	return r, translate("verify audit", rows.Err())
}

// LatestAudit returns the newest event's position and hash.
func (d *DB) LatestAudit(ctx context.Context) (int64, string, error) {
	var seq int64
	var hash string
	err := d.Pool.QueryRow(ctx, `SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1`).Scan(&seq, &hash)
	if err == pgx.ErrNoRows {
		return 0, "", nil
	}
	return seq, hash, translate("latest audit", err)
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
