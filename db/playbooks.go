package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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

// PairState is one (connector, tool) a playbook uses and where its
// pre-approval stands.
type PairState struct {
	approval.Pair
	ToolID           int64
	ToolDisplay      string
	ConnectorDisplay string
	Mode             approval.Mode
	Steps            []string
	Valid            bool   // a pre-approval holds now
	LapseReason      string // why the last one stopped holding; "" if never given
}

// Required reports whether the pair needs a pre-approval to run unattended.
func (p PairState) Required() bool { return p.Mode == approval.ModeRequireApproval }

// Missing reports whether the pair blocks enabling, scheduling and runs.
func (p PairState) Missing() bool { return p.Required() && !p.Valid }

// ApprovalRequiredError refuses to enable, schedule or run a playbook whose
// required pairs lack a valid pre-approval.
type ApprovalRequiredError struct {
	Playbook string
	Pairs    []PairState // the missing ones
}

func (e *ApprovalRequiredError) Error() string {
	return fmt.Sprintf("%s: %d tool(s) need the owner's approval", approval.CodePlaybookApproval, len(e.Pairs))
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
			if _, err := activeTool(ctx, tx, p.Connector, p.Tool); err != nil {
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

// lapsePreapprovals ends live pre-approvals matched by where, with one
// audit line each.
func lapsePreapprovals(ctx context.Context, tx pgx.Tx, reason, where string, args ...any) error {
	rows, err := tx.Query(ctx, `UPDATE playbook_preapprovals pa SET lapsed_at = now(), lapse_reason = '`+reasonSQL(reason)+`'
		FROM tools t WHERE t.id = pa.tool_id AND pa.revoked_at IS NULL AND pa.lapsed_at IS NULL AND `+where+`
		RETURNING pa.playbook_id, t.connector, t.name`, args...)
	if err != nil {
		return err
	}
	type lapsed struct{ playbook, connector, tool string }
	var list []lapsed
	for rows.Next() {
		var l lapsed
		if err := rows.Scan(&l.playbook, &l.connector, &l.tool); err != nil {
			rows.Close()
			return err
		}
		list = append(list, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, l := range list {
		if err := RecordAudit(ctx, tx, approval.AuditEvent{Actor: approval.SystemActor, Action: approval.ActionPreapprovalLapsed,
			PlaybookID: l.playbook, Connector: l.connector, Tool: l.tool, Detail: map[string]any{"reason": reason}}); err != nil {
			return err
		}
	}
	return nil
}

// reasonSQL admits only the known reasons into the statement.
func reasonSQL(r string) string {
	switch r {
	case approval.LapsePolicy, approval.LapseContent, approval.LapseOwner:
		return r
	}
	panic("unknown lapse reason")
}

// pairStates works out each pair's pre-approval from the premises that hold
// now: the playbook's fingerprint and owner, the tool's policy version.
func pairStates(ctx context.Context, tx pgx.Tx, p Playbook) ([]PairState, error) {
	var out []PairState
	for _, pair := range p.Definition.Pairs() {
		st := PairState{Pair: pair, Steps: p.Definition.StepsUsing(pair)}
		var mode string
		err := tx.QueryRow(ctx, `SELECT t.id, t.display_name, c.display_name, t.mode FROM tools t JOIN connectors c ON c.name = t.connector
			WHERE t.connector = $1 AND t.name = $2`, pair.Connector, pair.Tool).Scan(&st.ToolID, &st.ToolDisplay, &st.ConnectorDisplay, &mode)
		if err != nil {
			return nil, err
		}
		st.Mode = approval.Mode(mode)
		var given approval.PreApprovalPremises
		var live bool
		var stored string
		var version int
		err = tx.QueryRow(ctx, `SELECT pa.fingerprint, pa.policy_version, pa.owner_subject, pa.revoked_at IS NULL AND pa.lapsed_at IS NULL,
				pa.lapse_reason, t.policy_version
			FROM playbook_preapprovals pa JOIN tools t ON t.id = pa.tool_id
			WHERE pa.playbook_id = $1 AND pa.tool_id = $2 AND pa.revoked_at IS NULL ORDER BY pa.id DESC LIMIT 1`,
			p.ID, st.ToolID).Scan(&given.Fingerprint, &given.PolicyVersion, &given.Owner, &live, &stored, &version)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, err
		default:
			reason := approval.LapseReason(given, approval.PreApprovalPremises{Fingerprint: p.Fingerprint, PolicyVersion: version, Owner: p.OwnerSubject})
			st.Valid = live && reason == ""
			if !st.Valid {
				st.LapseReason = stored
				if reason != "" && stored == "" {
					st.LapseReason = reason
				}
			}
		}
		out = append(out, st)
	}
	return out, nil
}

func missing(states []PairState) []PairState {
	var out []PairState
	for _, s := range states {
		if s.Missing() {
			out = append(out, s)
		}
	}
	return out
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

// ListPlaybooks returns the playbooks subject owns, or all of them.
func (d *DB) ListPlaybooks(ctx context.Context, subject string, all bool) ([]Playbook, error) {
	rows, err := d.Pool.Query(ctx, playbookSelect+` WHERE $2 OR p.owner_subject = $1 ORDER BY p.name, p.id`, subject, all)
	if err != nil {
		return nil, translate("list playbooks", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Playbook])
	return list, translate("list playbooks", err)
}

// SetPlaybookState enables or disables a playbook and sets its schedule
// (nil keeps the current one). Enabling or scheduling is refused while a
// required pair lacks a valid pre-approval. owner, when not empty, must be
// the playbook's owner.
func (d *DB) SetPlaybookState(ctx context.Context, actor approval.Actor, owner, id string, enabled bool, newSchedule *string) (Playbook, error) {
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
				return &ApprovalRequiredError{Playbook: p.Name, Pairs: m}
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
	var are *ApprovalRequiredError
	if errors.As(err, &are) {
		return Playbook{}, are
	}
	return out, translate("set playbook state", err)
}

// PreApprove records the owner's pre-approval of every required pair that
// lacks one, under the premises that hold now. Only the owner may.
func (d *DB) PreApprove(ctx context.Context, owner User, id string) (int, error) {
	n := 0
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		p, err := getPlaybook(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if p.OwnerSubject != owner.Subject {
			return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such playbook.")
		}
		states, err := pairStates(ctx, tx, p)
		if err != nil {
			return err
		}
		for _, s := range missing(states) {
			// A lapsed live row would block the unique index: close it.
			if _, err := tx.Exec(ctx, `UPDATE playbook_preapprovals SET lapsed_at = now()
				WHERE playbook_id = $1 AND tool_id = $2 AND revoked_at IS NULL AND lapsed_at IS NULL`, id, s.ToolID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO playbook_preapprovals (playbook_id, tool_id, fingerprint, policy_version, owner_subject)
				SELECT $1, t.id, $3, t.policy_version, $4 FROM tools t WHERE t.id = $2`, id, s.ToolID, p.Fingerprint, owner.Subject); err != nil {
				return err
			}
			if err := RecordAudit(ctx, tx, approval.AuditEvent{Actor: owner.Actor(), Action: approval.ActionPreapprovalGranted,
				PlaybookID: id, Connector: s.Connector, Tool: s.Tool}); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, translate("pre-approve", err)
}

// RevokePreApproval ends the owner's pre-approval of one tool.
func (d *DB) RevokePreApproval(ctx context.Context, owner User, id string, toolID int64) error {
	return translate("revoke pre-approval", d.InTx(ctx, func(tx pgx.Tx) error {
		p, err := getPlaybook(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if p.OwnerSubject != owner.Subject {
			return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such playbook.")
		}
		var connector, tool string
		err = tx.QueryRow(ctx, `UPDATE playbook_preapprovals pa SET revoked_at = now() FROM tools t
			WHERE t.id = pa.tool_id AND pa.playbook_id = $1 AND pa.tool_id = $2 AND pa.revoked_at IS NULL AND pa.lapsed_at IS NULL
			RETURNING t.connector, t.name`, id, toolID).Scan(&connector, &tool)
		if err != nil {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: owner.Actor(), Action: approval.ActionPreapprovalRevoked,
			PlaybookID: id, Connector: connector, Tool: tool})
	}))
}

// Run is a started playbook run.
type Run struct {
	ID          string
	PlaybookID  string
	Preapproved []approval.Pair
}

// StartRun lays out the pairs whose pre-approval is valid now. A disabled
// playbook, or one with a required pair lacking approval, is refused.
func (d *DB) StartRun(ctx context.Context, key APIKey, id string) (Run, error) {
	var run Run
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		p, err := getPlaybook(ctx, tx, id, false)
		if err != nil {
			return err
		}
		if !p.Enabled {
			return approval.Errorf(approval.KindConflict, "playbook_disabled", "The playbook %q is not enabled, so it cannot run.", p.Name)
		}
		states, err := pairStates(ctx, tx, p)
		if err != nil {
			return err
		}
		if m := missing(states); len(m) > 0 {
			return &ApprovalRequiredError{Playbook: p.Name, Pairs: m}
		}
		ids := []int64{}
		run = Run{PlaybookID: id, Preapproved: []approval.Pair{}}
		for _, s := range states {
			if s.Required() && s.Valid {
				ids = append(ids, s.ToolID)
				run.Preapproved = append(run.Preapproved, s.Pair)
			}
		}
		if err := tx.QueryRow(ctx, `INSERT INTO playbook_runs (playbook_id, fingerprint, preapproved) VALUES ($1, $2, $3) RETURNING id::text`,
			id, p.Fingerprint, ids).Scan(&run.ID); err != nil {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: key.Actor(), Action: approval.ActionRunStarted, PlaybookID: id, RunID: run.ID,
			Detail: map[string]any{"preapproved": len(ids)}})
	})
	var are *ApprovalRequiredError
	if errors.As(err, &are) {
		return Run{}, are
	}
	return run, translate("start run", err)
}

// runFacts is what the check needs of a run: whether the tool was laid out,
// and the playbook's name for the model's message.
func runFacts(ctx context.Context, tx pgx.Tx, runID string, toolID int64) (preapproved bool, playbook, playbookID string, err error) {
	var ids []int64
	err = tx.QueryRow(ctx, `SELECT r.preapproved, p.name, p.id FROM playbook_runs r JOIN playbooks p ON p.id = r.playbook_id WHERE r.id::text = $1`,
		runID).Scan(&ids, &playbook, &playbookID)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, "", "", nil // an unknown run pre-approved nothing
	}
	return slices.Contains(ids, toolID), playbook, playbookID, err
}

// RunView is a recent run and what it was refused.
type RunView struct {
	ID        string
	StartedAt time.Time
	Refusals  []Refusal
	Allowed   int
}

// Refusal is a call a run was refused.
type Refusal struct {
	Tool   string
	CallID string
	Code   string
	At     time.Time
}

// RecentRuns lists a playbook's last runs with their refusals.
func (d *DB) RecentRuns(ctx context.Context, id string, limit int) ([]RunView, error) {
	rows, err := d.Pool.Query(ctx, `SELECT r.id::text, r.started_at,
		COALESCE((SELECT json_agg(json_build_object('tool', c.display_name || ' · ' || t.display_name, 'call_id', f.call_id, 'code', f.code, 'at', f.refused_at) ORDER BY f.id)
			FROM playbook_run_refusals f JOIN tools t ON t.id = f.tool_id JOIN connectors c ON c.name = t.connector WHERE f.run_id = r.id), '[]')
		FROM playbook_runs r WHERE r.playbook_id = $1 ORDER BY r.started_at DESC LIMIT $2`, id, limit)
	if err != nil {
		return nil, translate("recent runs", err)
	}
	defer rows.Close()
	var out []RunView
	for rows.Next() {
		var r RunView
		var raw []byte
		if err := rows.Scan(&r.ID, &r.StartedAt, &raw); err != nil {
			return nil, translate("recent runs", err)
		}
		var refs []struct {
			Tool   string    `json:"tool"`
			CallID string    `json:"call_id"`
			Code   string    `json:"code"`
			At     time.Time `json:"at"`
		}
		_ = json.Unmarshal(raw, &refs)
		for _, f := range refs {
			r.Refusals = append(r.Refusals, Refusal{Tool: f.Tool, CallID: f.CallID, Code: f.Code, At: f.At})
		}
		out = append(out, r)
	}
	return out, translate("recent runs", rows.Err())
}
