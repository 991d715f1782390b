package db

import (
	"context"
	"errors"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// Run is a started playbook run.
type Run struct {
	ID          string
	PlaybookID  string
	Preapproved []approval.Pair
}

// RunRefusedError is a run refused at start. The refusal is recorded as
// run RunID, which runs nothing; Err is the refusal itself: an
// *approval.Error (playbook_disabled) or an *ApprovalRequiredError.
type RunRefusedError struct {
	RunID string
	Err   error
}

func (e *RunRefusedError) Error() string {
	return "run " + e.RunID + " refused at start: " + e.Err.Error()
}

// Unwrap returns the refusal.
func (e *RunRefusedError) Unwrap() error { return e.Err }

// RefusedPair is a pair that lacked a valid pre-approval when a run was
// refused at start, and why ("" if it was never given or was revoked).
type RefusedPair struct {
	approval.Pair
	Label  string `json:"label"`
	Reason string `json:"reason"`
}

// StartRun lays out the pairs whose pre-approval is valid now. A disabled
// playbook, or one with a required pair lacking approval, is refused with a
// *RunRefusedError; the refusal is still committed, as a run that lays out
// nothing with its code and one audit line, so that it shows on the
// playbook's page.
func (d *DB) StartRun(ctx context.Context, key APIKey, id string) (Run, error) {
	var run Run
	var refused *RunRefusedError
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		run, refused = Run{}, nil
		p, err := getPlaybook(ctx, tx, id, false)
		if err != nil {
			return err
		}
		states, err := pairStates(ctx, tx, p)
		if err != nil {
			return err
		}
		var refusal error
		m := missing(states)
		switch {
		case !p.Enabled:
			refusal = approval.Errorf(approval.KindConflict, approval.CodePlaybookDisabled, "The playbook %q is not enabled, so it cannot run.", p.Name)
		case len(m) > 0:
			refusal = &ApprovalRequiredError{Playbook: p.Name, Pairs: m, Fingerprint: p.Fingerprint}
		}
		if refusal != nil {
			runID, err := recordRefusedStart(ctx, tx, key, p, refusal, m)
			refused = &RunRefusedError{RunID: runID, Err: refusal}
			return err
		}
		ids := []int64{}
		run = Run{PlaybookID: id, Preapproved: []approval.Pair{}}
		for _, s := range states {
			if s.Required() && s.Valid {
				ids = append(ids, s.ToolID)
				run.Preapproved = append(run.Preapproved, s.Pair)
			}
		}
		// The run keeps the premises of its start: the key, the owner and
		// the live pre-approval rows it laid out; runFacts re-checks them.
		if err := tx.QueryRow(ctx, `INSERT INTO playbook_runs (playbook_id, fingerprint, preapproved, api_key_id, owner_subject, preapproval_ids)
			VALUES ($1, $2, $3, $4, $5, ARRAY(SELECT pa.id FROM playbook_preapprovals pa WHERE pa.playbook_id = $1 AND pa.tool_id = ANY($3)
				AND pa.revoked_at IS NULL AND pa.lapsed_at IS NULL)) RETURNING id::text`,
			id, p.Fingerprint, ids, key.ID, p.OwnerSubject).Scan(&run.ID); err != nil {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: key.Actor(), Action: approval.ActionRunStarted, PlaybookID: id, RunID: run.ID,
			Detail: map[string]any{"preapproved": len(ids)}})
	})
	if err != nil {
		return Run{}, translate("start run", err)
	}
	if refused != nil {
		return Run{}, refused
	}
	return run, nil
}

// recordRefusedStart records a run refused at start: its code, the pairs
// that lacked approval, and one audit line. It lays out nothing.
func recordRefusedStart(ctx context.Context, tx pgx.Tx, key APIKey, p Playbook, refusal error, m []PairState) (string, error) {
	code := string(approval.CodePlaybookApproval)
	pairs := []RefusedPair{}
	if e := approval.AsError(refusal); e != nil {
		code = e.Code
	} else {
		for _, s := range m {
			pairs = append(pairs, RefusedPair{Pair: s.Pair, Label: s.Label(), Reason: s.LapseReason})
		}
	}
	var runID string
	if err := tx.QueryRow(ctx, `INSERT INTO playbook_runs (playbook_id, fingerprint, preapproved, refused_code, refused_pairs)
		VALUES ($1, $2, '{}', $3, $4) RETURNING id::text`, p.ID, p.Fingerprint, code, pairs).Scan(&runID); err != nil {
		return "", err
	}
	return runID, RecordAudit(ctx, tx, approval.AuditEvent{Actor: key.Actor(), Action: approval.ActionRunRefused, PlaybookID: p.ID,
		RunID: runID, Detail: map[string]any{"code": code, "tools": len(pairs)}})
}

// runFacts is what the check needs of a run: whether the tool passes by
// pre-approval, whether the run runs nothing (refused at start, or
// unknown), and the playbook's name for the model's message. A run id is
// not a bearer token: the tool passes only for the key that started the
// run, for the playbook's owner at the start who still owns it, while the
// playbook is enabled, and while the pre-approval row the run laid out for
// the tool is live under the premises that hold now (invariant 9).
func runFacts(ctx context.Context, tx pgx.Tx, key APIKey, user, runID string, toolID int64) (preapproved, refused bool, playbook, playbookID string, err error) {
	var code string
	err = tx.QueryRow(ctx, `SELECT r.refused_code, p.name, p.id,
			r.api_key_id IS NOT DISTINCT FROM $3 AND r.owner_subject <> '' AND r.owner_subject = $4 AND p.owner_subject = r.owner_subject
			AND p.enabled AND p.fingerprint = r.fingerprint AND $2 = ANY(r.preapproved)
			AND EXISTS (SELECT 1 FROM playbook_preapprovals pa JOIN tools t ON t.id = pa.tool_id
				WHERE pa.id = ANY(r.preapproval_ids) AND pa.playbook_id = p.id AND pa.tool_id = $2
				AND pa.revoked_at IS NULL AND pa.lapsed_at IS NULL AND pa.fingerprint = p.fingerprint
				AND pa.policy_version = t.policy_version AND pa.owner_subject = p.owner_subject)
		FROM playbook_runs r JOIN playbooks p ON p.id = r.playbook_id
		WHERE r.id::text = $1`, runID, toolID, key.ID, user).Scan(&code, &playbook, &playbookID, &preapproved)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, true, "", "", nil // an unknown run lays out nothing and runs nothing
	}
	return preapproved, code != "", playbook, playbookID, err
}

// Run call outcomes stored beside refusal codes. The run's calls share one
// table with its refusals (named for them, from before allowed calls were
// recorded): a row's code is either a refusal code or one of these.
const (
	RunCallAllowedByPreapproval = "allowed_by_preapproval"
	RunCallAllowedByPolicy      = "allowed_by_policy"
)

// recordRunCall records one call a run made, allowed or refused. Calls of
// an unknown run (playbookID "") are refused and audited, not recorded.
func recordRunCall(ctx context.Context, tx pgx.Tx, req CheckRequest, tool Tool, playbookID string, o approval.Outcome) error {
	if playbookID == "" {
		return nil
	}
	var code string
	switch {
	case o.Verdict == approval.Allow && o.Via == approval.ViaPreapproval:
		code = RunCallAllowedByPreapproval
	case o.Verdict == approval.Allow:
		code = RunCallAllowedByPolicy
	case o.Verdict == approval.Deny:
		code = string(o.Code)
	default:
		return nil // a run never waits; Evaluate gives it no pending verdict
	}
	_, err := tx.Exec(ctx, `INSERT INTO playbook_run_refusals (run_id, tool_id, call_id, code) VALUES ($1::uuid, $2, $3, $4)`,
		req.PlaybookRunID, tool.ID, req.CallID, code)
	return err
}

// RunView is a recent run: refused at start (RefusedCode, and for
// PLAYBOOK_TOOL_APPROVAL_REQUIRED the pairs), or started, with every call
// it made in order.
type RunView struct {
	ID           string        `db:"id"`
	StartedAt    time.Time     `db:"started_at"`
	RefusedCode  string        `db:"refused_code"`
	RefusedPairs []RefusedPair `db:"refused_pairs"`
	Calls        []RunCall     `db:"calls"`
}

// RunCall is a call a run made: allowed (Code is RunCallAllowedByPreapproval
// or RunCallAllowedByPolicy) or refused (Code is the refusal code).
type RunCall struct {
	approval.Pair
	Label  string    `json:"label"`
	CallID string    `json:"call_id"`
	Code   string    `json:"code"`
	At     time.Time `json:"at"`
}

// Allowed reports whether the call ran.
func (c RunCall) Allowed() bool {
	return c.Code == RunCallAllowedByPreapproval || c.Code == RunCallAllowedByPolicy
}

// RecentRuns lists a playbook's last runs with their calls. A stored value
// that cannot be read is an error, never a call left out.
func (d *DB) RecentRuns(ctx context.Context, id string, limit int) ([]RunView, error) {
	rows, err := d.Pool.Query(ctx, `SELECT r.id::text AS id, r.started_at, r.refused_code, r.refused_pairs,
		COALESCE((SELECT json_agg(json_build_object('connector', t.connector, 'tool', t.name, 'label', c.display_name || ' · ' || t.display_name,
				'call_id', f.call_id, 'code', f.code, 'at', f.refused_at) ORDER BY f.id)
			FROM playbook_run_refusals f JOIN tools t ON t.id = f.tool_id JOIN connectors c ON c.name = t.connector WHERE f.run_id = r.id), '[]') AS calls
		FROM playbook_runs r WHERE r.playbook_id = $1 ORDER BY r.started_at DESC LIMIT $2`, id, limit)
	if err != nil {
		return nil, translate("recent runs", err)
	}
	runs, err := pgx.CollectRows(rows, pgx.RowToStructByName[RunView])
	return runs, translate("recent runs", err)
}
