package db

import (
	"context"
	"errors"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// checkByPolicy answers the calls that the tool's policy alone allows, in
// one statement and without a transaction: nothing is written for them, and
// the decision order (approval.Evaluate) returns "allowed by policy" before
// it looks at rejections or grants, so those are not read. The statement
// also says whether the same call is already pending, since a call sent
// again while pending gets its item (the transactional path answers that).
// decided is false whenever anything else could apply: a playbook run, a
// pending item, or any outcome other than allowed by policy. The tool's row
// is read without a lock: a policy change that commits after this read is
// ordered after this check, as it would be had the check finished first.
func (d *DB) checkByPolicy(ctx context.Context, key APIKey, req CheckRequest, args approval.Arguments, opt CheckOptions) (CheckResult, bool, error) {
	if req.PlaybookRunID != "" {
		return CheckResult{}, false, nil
	}
	rows, err := d.Pool.Query(ctx, toolSelect+`
		WHERE t.connector = $1 AND t.name = $2 AND t.retired_at IS NULL AND c.deleted_at IS NULL
		  AND NOT EXISTS (SELECT 1 FROM approvals a
			WHERE a.api_key_id = $3 AND a.owner_subject = $4 AND a.conversation_id = $5 AND a.turn_id = $6
			  AND a.call_id = $7 AND a.tool_id = t.id AND a.arguments_digest = $8 AND a.status = 'pending' AND a.expires_at > now())`,
		req.Connector, req.Tool, key.ID, req.User, req.ConversationID, req.TurnID, req.CallID, args.Digest)
	if err != nil {
		return CheckResult{}, false, err
	}
	tool, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Tool])
	if err == pgx.ErrNoRows { // unknown, retired, or pending: the full check answers
		return CheckResult{}, false, nil
	}
	if err != nil {
		return CheckResult{}, false, err
	}
	in := approval.CheckInput{Policy: tool.Policy(), DeniedThreshold: opt.DeniedThreshold,
		Condition: evalCondition(tool.Condition, args, opt.Condition)}
	o := approval.Evaluate(in)
	if o.Verdict != approval.Allow || o.Via != approval.ViaPolicy {
		return CheckResult{}, false, nil
	}
	return CheckResult{Outcome: o, Tool: tool}, true, nil
}

// errToolChanged says the tool's policy changed between the check's read
// and its pending item's insert; the check starts again.
var errToolChanged = errors.New("db: the tool's policy changed during the check")

// holdToolPolicy locks the tool's row (shared) before a pending item is
// inserted, so that a policy change or retirement either commits first and
// is seen here, or waits for this item and then ends it; it fails with
// errToolChanged when the policy read earlier is no longer current.
func holdToolPolicy(ctx context.Context, tx pgx.Tx, tool Tool) error {
	var current bool
	err := tx.QueryRow(ctx, `SELECT t.policy_version = $2 AND t.retired_at IS NULL AND c.deleted_at IS NULL
		FROM tools t JOIN connectors c ON c.name = t.connector WHERE t.id = $1 FOR SHARE OF t`, tool.ID, tool.PolicyVersion).Scan(&current)
	if err == nil && !current {
		return errToolChanged
	}
	return err
}
