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
		// CURRENT_TIMESTAMP is now(): the database's clock, read once per
		// statement, as every other deadline here.
		rows, err := tx.Query(ctx, `UPDATE approvals u SET escalated_at = CURRENT_TIMESTAMP
			WHERE u.id IN (SELECT a.id FROM approvals a
				WHERE a.status = 'pending' AND a.escalated_at IS NULL AND a.escalate_at <= CURRENT_TIMESTAMP
				  AND a.expires_at > CURRENT_TIMESTAMP
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

// Escalation is the tool's escalation rule.
func (t Tool) Escalation() approval.Escalation {
	if t.EscalateTo == "" || t.EscalateAfterSeconds == nil {
		return approval.Escalation{}
	}
	return approval.Escalation{Team: t.EscalateTo, After: time.Duration(*t.EscalateAfterSeconds) * time.Second}
}

// setEscalation stores a tool's escalation rule inside the policy change's
// transaction. The backup team must exist: a rule naming no team would
// escalate to nobody.
func setEscalation(ctx context.Context, tx pgx.Tx, toolID int64, e approval.Escalation) error {
	var secs *int32
	if e.On() {
		known, err := teamExists(ctx, tx, e.Team)
		if err != nil {
			return err
		}
		if !known {
			return approval.Errorf(approval.KindUnprocessable, approval.CodeInvalidEscalation, "There is no team named %q.", e.Team)
		}
		s := int32(e.After / time.Second)
		secs = &s
	}
	_, err := tx.Exec(ctx, `UPDATE tools SET escalate_to = $2, escalate_after_seconds = $3 WHERE id = $1`, toolID, e.Team, secs)
	return err
}

// teamExists says whether a team named name exists (an admin's, or an IdP
// group someone signed in with): a policy may name only such a team, as its
// deciding team or its backup team, so that a group created later under
// that name does not become its deciders.
func teamExists(ctx context.Context, tx pgx.Tx, name string) (bool, error) {
	var known bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM teams WHERE name = $1)`, name).Scan(&known)
	return known, err
}

// escalationDetail adds t's escalation rule to a policy audit detail.
func escalationDetail(t Tool, d map[string]any) {
	if e := t.Escalation(); e.On() {
		d["escalate_to"], d["escalate_after_seconds"] = e.Team, int64(e.After/time.Second)
	}
}

// BackupTeamChoices lists the teams an escalation rule may name, by name.
func (d *DB) BackupTeamChoices(ctx context.Context) ([]string, error) {
	rows, err := d.Pool.Query(ctx, `SELECT name FROM teams ORDER BY name`)
	if err != nil {
		return nil, translate("backup team choices", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return list, translate("backup team choices", err)
}

// readEscalation fills t's escalation rule.
func readEscalation(ctx context.Context, q rowQuerier, t *Tool) error {
	return q.QueryRow(ctx, `SELECT escalate_to, escalate_after_seconds FROM tools WHERE id = $1`, t.ID).Scan(&t.EscalateTo, &t.EscalateAfterSeconds)
}
