package db

import (
	"context"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// Playbook is a registered playbook.
type Playbook struct {
	ID           string              `db:"id"`
	OwnerSubject string              `db:"owner_subject"`
	OwnerName    string              `db:"owner_name"`
	Name         string              `db:"name"`
	Definition   approval.Definition `db:"definition"`
	Fingerprint  string              `db:"fingerprint"`
	Enabled      bool                `db:"enabled"`
	Schedule     string              `db:"schedule"`
	UpdatedAt    time.Time           `db:"updated_at"`
}

// PlaybookListItem is a playbook on the list with the state of its pairs.
type PlaybookListItem struct {
	Playbook
	Pairs []PairState
}

const playbookSelect = `SELECT p.id, p.owner_subject, COALESCE(NULLIF(u.name, ''), NULLIF(u.email, ''), p.owner_subject) AS owner_name,
	p.name, p.definition, p.fingerprint, p.enabled, p.schedule, p.updated_at
	FROM playbooks p LEFT JOIN LATERAL (SELECT name, email FROM users WHERE subject = p.owner_subject ORDER BY id LIMIT 1) u ON true`

func getPlaybook(ctx context.Context, tx pgx.Tx, id string, lock bool) (Playbook, error) {
	sql := playbookSelect + ` WHERE p.id = $1`
	if lock {
		sql += ` FOR UPDATE OF p`
	}
	rows, err := tx.Query(ctx, sql, id)
	if err != nil {
		return Playbook{}, err
	}
	p, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Playbook])
	if err == pgx.ErrNoRows {
		return Playbook{}, approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such playbook.")
	}
	return p, err
}

// UpsertPlaybook registers or updates a playbook from the runtime. Every
// tool a step names must be in the catalog. A changed owner or changed
// content lapses the playbook's pre-approvals (audited once, here).
func (d *DB) UpsertPlaybook(ctx context.Context, actor approval.Actor, id, owner string, def approval.Definition) (Playbook, error) {
	if err := def.Validate(); err != nil {
		return Playbook{}, err
	}
	fp, err := def.Fingerprint()
	if err != nil {
		return Playbook{}, err
	}
	var out Playbook
	err = d.InTx(ctx, func(tx pgx.Tx) error {
		for _, p := range def.Pairs() {
			if _, err := activeTool(ctx, tx, p.Connector, p.Tool, true); err != nil {
				return approval.Errorf(approval.KindInvalid, approval.CodeUnknownTool,
					"The tool %s is not in the catalog; sync its connector first.", p)
			}
		}
		before, err := getPlaybook(ctx, tx, id, true)
		exists := err == nil
		if err != nil && approval.KindOf(err) != approval.KindNotFound {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO playbooks (id, owner_subject, name, definition, fingerprint) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO UPDATE SET owner_subject = EXCLUDED.owner_subject, name = EXCLUDED.name,
				definition = EXCLUDED.definition, fingerprint = EXCLUDED.fingerprint, updated_at = now()`,
			id, owner, def.Name, def, fp); err != nil {
			return err
		}
		ev := approval.AuditEvent{Actor: actor, Action: approval.ActionPlaybookRegistered, PlaybookID: id,
			Detail: map[string]any{"fingerprint": fp}}
		if exists {
			ev.Action = approval.ActionPlaybookUpdated
			switch {
			case before.OwnerSubject != owner:
				ev.Detail["owner_before"], ev.Detail["owner_after"] = before.OwnerSubject, owner
				err = lapsePreapprovals(ctx, tx, approval.LapseOwner, `pa.playbook_id = $1`, id)
			case before.Fingerprint != fp:
				err = lapsePreapprovals(ctx, tx, approval.LapseContent, `pa.playbook_id = $1`, id)
			}
			if err != nil {
				return err
			}
		}
		if err := RecordAudit(ctx, tx, ev); err != nil {
			return err
		}
		out, err = getPlaybook(ctx, tx, id, false)
		return err
	})
	return out, translate("upsert playbook", err)
}

// PlaybookWithPairs returns a playbook and its pairs' state.
func (d *DB) PlaybookWithPairs(ctx context.Context, id string) (Playbook, []PairState, error) {
	var p Playbook
	var states []PairState
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) (err error) {
		if p, err = getPlaybook(ctx, tx, id, false); err != nil {
			return err
		}
		states, err = pairStates(ctx, tx, p)
		return err
	})
	return p, states, translate("playbook", err)
}

// ListPlaybooks returns the playbooks subject owns, or all of them, each
// with its pairs' state. It reads a fixed number of statements however many
// playbooks and pairs there are.
func (d *DB) ListPlaybooks(ctx context.Context, subject string, all bool) ([]PlaybookListItem, error) {
	rows, err := d.Pool.Query(ctx, playbookSelect+` WHERE $2 OR p.owner_subject = $1 ORDER BY p.name, p.id`, subject, all)
	if err != nil {
		return nil, translate("list playbooks", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Playbook])
	if err != nil {
		return nil, translate("list playbooks", err)
	}
	states, err := pairStatesFor(ctx, d.Pool, list)
	if err != nil {
		return nil, translate("list playbooks", err)
	}
	out := make([]PlaybookListItem, len(list))
	for i, p := range list {
		out[i] = PlaybookListItem{Playbook: p, Pairs: states[p.ID]}
	}
	return out, nil
}

// SetPlaybookState enables or disables a playbook and sets its schedule
// (nil keeps the current one). A schedule that is not a five-field cron
// expression is refused (422) and nothing is stored. Enabling or
// scheduling is refused while a required pair lacks a valid pre-approval.
// owner, when not empty, must be the playbook's owner.
func (d *DB) SetPlaybookState(ctx context.Context, actor approval.Actor, owner, id string, enabled bool, newSchedule *string) (Playbook, error) {
	if newSchedule != nil {
		checked, err := approval.CheckSchedule(*newSchedule)
		if err != nil {
			return Playbook{}, err
		}
		newSchedule = &checked
	}
	var out Playbook
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		p, err := getPlaybook(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if owner != "" && p.OwnerSubject != owner {
			return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such playbook.")
		}
		schedule := p.Schedule
		if newSchedule != nil {
			schedule = *newSchedule
		}
		if enabled || schedule != "" {
			states, err := pairStates(ctx, tx, p)
			if err != nil {
				return err
			}
			if m := missing(states); len(m) > 0 {
				return &ApprovalRequiredError{Playbook: p.Name, Pairs: m, Fingerprint: p.Fingerprint}
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE playbooks SET enabled = $2, schedule = $3, updated_at = now() WHERE id = $1`, id, enabled, schedule); err != nil {
			return err
		}
		action := approval.ActionPlaybookDisabled
		if enabled {
			action = approval.ActionPlaybookEnabled
		}
		if err := RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: action, PlaybookID: id,
			Detail: map[string]any{"schedule": schedule}}); err != nil {
			return err
		}
		out, err = getPlaybook(ctx, tx, id, false)
		return err
	})
	if are := asApprovalRequired(err); are != nil {
		return Playbook{}, are
	}
	return out, translate("set playbook state", err)
}
