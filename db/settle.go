package db

import (
	"context"
	"fmt"
	"strconv"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// ending is how settle ends items.
type ending struct {
	status   approval.Status
	code     approval.ReasonCode // stored with the item; empty when the status implies it
	action   string
	actor    approval.Actor
	approved bool // also end approved items that were not claimed yet
}

// settle ends the matching items in flight with an audit line and a
// notification each, inside tx. where may use $1… for args.
func settle(ctx context.Context, tx pgx.Tx, e ending, where string, args ...any) ([]Approval, error) {
	ids, err := endItems(ctx, tx, e, where, args...)
	if err != nil {
		return nil, err
	}
	return announceEnded(ctx, tx, e, ids)
}

// endItems moves the matching items to e.status and returns their ids. The
// rows are locked in id order first, so that two sweeps over overlapping
// items (a block and a stopped turn) wait for each other instead of
// deadlocking; the audit lines come afterwards (announceEnded), as in every
// other writer.
func endItems(ctx context.Context, tx pgx.Tx, e ending, where string, args ...any) ([]string, error) {
	from := `status = 'pending'`
	if e.approved {
		from = `status IN ('pending', 'approved')`
	}
	var code *string
	if e.code != "" {
		c := string(e.code)
		code = &c
	}
	n := len(args)
	args = append(args, string(e.status), code)
	rows, err := tx.Query(ctx, fmt.Sprintf(`UPDATE approvals u SET status = $%d, end_code = $%d, decided_at = COALESCE(u.decided_at, now())
		WHERE u.%s AND u.id IN (SELECT a.id FROM approvals a WHERE a.%s AND %s ORDER BY a.id FOR UPDATE)
		RETURNING u.id::text`, n+1, n+2, from, from, where), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// announceEnded writes the audit line and the notification of each ended
// item: waiters wake, and inbox streams drop the card. However many items
// ended, it reads them in one statement, writes their audit lines in one
// insert and coalesces their notifications into a few.
func announceEnded(ctx context.Context, tx pgx.Tx, e ending, ids []string) ([]Approval, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := collectApprovals(tx.Query(ctx, approvalSelect+` WHERE a.id = ANY($1::uuid[]) ORDER BY a.id`, ids))
	if err != nil {
		return nil, err
	}
	events := make([]approval.AuditEvent, 0, len(out))
	changes := make([]Change, 0, len(out))
	for _, a := range out {
		var detail map[string]any
		if e.code != "" {
			detail = map[string]any{"code": string(e.code)}
		}
		if a.Scope != nil { // it had been approved, and now will not run
			if detail == nil {
				detail = map[string]any{}
			}
			detail["was"] = string(approval.StatusApproved)
		}
		events = append(events, auditForApproval(a, e.actor, e.action, detail))
		if err := outboxEnded(ctx, tx, a); err != nil {
			return nil, err
		}
		changes = append(changes, changeOf(a))
	}
	if err := RecordAuditMany(ctx, tx, events); err != nil {
		return nil, err
	}
	return out, notifyMany(ctx, tx, changes)
}

// expireLockID is the advisory lock of the expiry sweep, so that one
// instance sweeps at a time.
const expireLockID = 0x657870697265 // "expire"

var expiry = ending{status: approval.StatusExpired, action: approval.ActionExpired, actor: approval.SystemActor}

// ExpireDue expires pending items past their wait cap, at most limit at a
// time, in one short transaction of a few statements (see announceEnded);
// it returns how many it expired. Several instances may call it: the
// advisory lock, which only sweeps take, lets one sweep while the others
// skip, and items a request holds are skipped, not waited for.
func (d *DB) ExpireDue(ctx context.Context, limit int) (int, error) {
	n := 0
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		var got bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, int64(expireLockID)).Scan(&got); err != nil || !got {
			return err
		}
		list, err := settle(ctx, tx, expiry,
			`a.id IN (SELECT id FROM approvals WHERE status = 'pending' AND expires_at <= now() ORDER BY expires_at LIMIT `+strconv.Itoa(limit)+` FOR UPDATE SKIP LOCKED)`)
		n = len(list)
		return err
	})
	if err != nil {
		return n, translate("expire due", err)
	}
	// The same sweep records standing grants that reached their end.
	_, err = d.ExpireGrants(ctx, limit)
	return n, err
}

// ExpireIfDue expires one item whose wait cap has passed (a waiter does
// this at the deadline instead of waiting for the sweep).
func (d *DB) ExpireIfDue(ctx context.Context, id string) error {
	return translate("expire item", d.InTx(ctx, func(tx pgx.Tx) error {
		_, err := settle(ctx, tx, expiry, `a.id = $1 AND a.expires_at <= now()`, id)
		return err
	}))
}

// CancelTurn ends a stopped turn's items that key created, and those its
// checks in that turn joined as the second guard of the same call
// (joinedInTurnSQL): pending ones, and approved ones not claimed yet, which
// can then no longer be claimed. It returns how many it ended.
func (d *DB) CancelTurn(ctx context.Context, key APIKey, user, conversation, turn string) (int, error) {
	n := 0
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		list, err := settle(ctx, tx, ending{status: approval.StatusCancelled, action: approval.ActionCancelled, actor: key.Actor(), approved: true},
			`a.owner_subject = $1 AND ((a.conversation_id = $2 AND a.turn_id = $3 AND a.api_key_id = $4) OR `+joinedInTurnSQL+`)`,
			user, conversation, turn, key.ID)
		n = len(list)
		return err
	})
	return n, translate("cancel turn", err)
}
