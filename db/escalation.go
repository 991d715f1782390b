package db

import (
	"context"
	"log/slog"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// EventApprovalEscalated is the outbox event of an item that escalated:
// its backup team's members are told as of a new item (email, push), and
// webhooks subscribed to it hear of it.
const EventApprovalEscalated = "approval.escalated"

// EscalateDue escalates up to limit pending items whose rule's delay
// passed without an answer: each once (escalated_at), with an audit line
// naming the team, an outbox event that tells the team's members, and a
// poke to their inboxes, in one transaction. It never touches an item's
// expiry: an item due to expire is left to the expiry sweep (the expiry
// wins). Several instances may run it; items a request holds are skipped.
func (d *DB) EscalateDue(ctx context.Context, limit int) (int, error) {
	n := 0
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE approvals u SET escalated_at = now()
			WHERE u.id IN (SELECT a.id FROM approvals a
				WHERE a.status = 'pending' AND a.escalated_at IS NULL AND a.escalate_at <= now() AND a.expires_at > now()
				ORDER BY a.id LIMIT $1 FOR UPDATE SKIP LOCKED)
			RETURNING u.id::text`, limit)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		n = len(ids)
		var changes []Change
		for _, id := range ids {
			a, err := getApproval(ctx, tx, id, false)
			if err != nil {
				return err
			}
			after := time.Duration(0)
			if a.EscalateAfterSeconds != nil {
				after = time.Duration(*a.EscalateAfterSeconds) * time.Second
			}
			if err := RecordAudit(ctx, tx, auditForApproval(a, approval.SystemActor, approval.ActionEscalated,
				map[string]any{"to_team": a.EscalateTo, "after": approval.DelayWords(after),
					"summary": "escalated to team " + a.EscalateTo})); err != nil {
				return err
			}
			ev := approvalEvent(EventApprovalEscalated, a)
			ev.Detail["team"] = a.EscalateTo
			if err := RecordEvent(ctx, tx, ev); err != nil {
				return err
			}
			members, err := escalationRecipients(ctx, tx, id)
			if err != nil {
				return err
			}
			changes = append(changes, Change{ApprovalID: id, Owner: a.OwnerSubject})
			for _, m := range members {
				changes = append(changes, Change{ApprovalID: id, Owner: m})
			}
		}
		return notifyMany(ctx, tx, changes)
	})
	return n, translate("escalate due", err)
}

// EscalationRecipients are the people told that item id escalated: the
// members of its backup team who may decide it (by the one predicate, so
// an owner excluded from a quorum is not asked either).
func (d *DB) EscalationRecipients(ctx context.Context, id string) ([]string, error) {
	list, err := escalationRecipients(ctx, d.Pool, id)
	return list, translate("escalation recipients", err)
}

func escalationRecipients(ctx context.Context, q querier, id string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT m.subject FROM approvals a JOIN team_members m ON m.team = a.escalate_to
		WHERE a.id = $1 AND a.escalated_at IS NOT NULL AND countersign_may_decide(a, m.subject) ORDER BY m.subject`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// RunEscalations escalates due items every interval until ctx ends (for an
// embedded server without the serve command's sweep, such as tests').
func (d *DB) RunEscalations(ctx context.Context, log *slog.Logger, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := d.EscalateDue(ctx, 500); err != nil && ctx.Err() == nil {
			log.Warn("escalation sweep", "err", err)
		}
	}
}
