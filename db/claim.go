package db

import (
	"context"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// Claim turns an approved item into consumed, once, for the key that
// created it and only with the call id and digest that were shown. The
// tool's policy is read again in the same transaction: an admin's block
// wins over an approval given before it.
func (d *DB) Claim(ctx context.Context, key APIKey, id, callID, digest string) (Approval, error) {
	var out Approval
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		a, err := getApproval(ctx, tx, id, true)
		if err != nil {
			return err
		}
		// The second guard of the same call claims the first guard's
		// approval once (invariant 18).
		if joined, ok, err := claimJoined(ctx, tx, key, a, callID, digest); ok || err != nil {
			out = joined
			return err
		}
		if a.APIKeyID != key.ID {
			return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such approval.")
		}
		blocked, err := toolBlocked(ctx, tx, a.ToolID)
		if err != nil {
			return err
		}
		switch {
		case a.Status == approval.StatusConsumed:
			return approval.Errorf(approval.KindConflict, approval.CodeConsumed, "This approval was already used; an approval runs one call once.")
		case a.Code() == approval.CodeBlockedByPolicy || (a.Status == approval.StatusApproved && blocked):
			return approval.Errorf(approval.KindConflict, string(approval.CodeBlockedByPolicy), "%s",
				approval.Message(approval.CodeBlockedByPolicy, approval.MessageInput{Tool: a.ToolDisplay}))
		case a.Status != approval.StatusApproved:
			return approval.Errorf(approval.KindConflict, approval.CodeNotApproved, "This call is not approved (%s), so it must not run.", a.Status)
		case a.CallID != callID || a.ArgumentsDigest != digest:
			return approval.Errorf(approval.KindConflict, approval.CodeCallMismatch, "The approval was given for a different call or different arguments, so this call must not run.")
		}
		if _, err := tx.Exec(ctx, `UPDATE approvals SET status = 'consumed', consumed_at = now() WHERE id = $1 AND status = 'approved'`, id); err != nil {
			return err
		}
		if out, err = getApproval(ctx, tx, id, false); err != nil {
			return err
		}
		if out.DecidedBy, err = decidedBy(ctx, tx, out); err != nil {
			return err
		}
		if err := RecordAudit(ctx, tx, auditForApproval(out, key.Actor(), approval.ActionClaimed, withPreImages(nil, out.Diff))); err != nil {
			return err
		}
		return notify(ctx, tx, changeOf(a))
	})
	return out, translate("claim approval", err)
}

// toolBlocked reads the tool's mode as committed now. It takes no lock on
// the tool: UpdatePolicy locks the tool and then the items, so a claim that
// holds an item and waited for the tool could deadlock with it. None is
// needed: a block that commits before the claim locks the item has already
// ended it, and one that commits later waited for the claim's row.
func toolBlocked(ctx context.Context, tx pgx.Tx, toolID int64) (bool, error) {
	var mode string
	if err := tx.QueryRow(ctx, `SELECT mode FROM tools WHERE id = $1`, toolID).Scan(&mode); err != nil {
		return false, err
	}
	return approval.Policy{Mode: approval.Mode(mode)}.Blocks(), nil
}
