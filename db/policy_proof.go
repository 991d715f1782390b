package db

import (
	"context"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// SetToolProof sets whether approving the tool's calls needs a passkey
// (proof) and, optionally, the CEL condition that limits it to some calls.
// Like every policy change it bumps the policy version (standing grants and
// playbook pre-approvals lapse) and is audited with before and after. With
// a passkey required the tool offers no standing approval (the
// tools_proof_no_standing trigger), its pending items stop offering it,
// and they too need a passkey from now on (stronger, never weaker: the
// condition is not evaluated again for calls already waiting).
// expectVersion, when not zero, guards against saving over another change.
func (d *DB) SetToolProof(ctx context.Context, actor approval.Actor, toolID int64, expectVersion int, proof approval.Proof, condition string) (Tool, error) {
	if proof != approval.ProofPasskey {
		proof, condition = approval.ProofNone, ""
	}
	var out Tool
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		before, err := toolByID(ctx, tx, toolID, true)
		if err != nil {
			return err
		}
		if expectVersion != 0 && before.PolicyVersion != expectVersion {
			return approval.Errorf(approval.KindConflict, "policy_changed",
				"Someone changed this tool's policy while you were editing it. Review the current settings and save again.")
		}
		if _, err := tx.Exec(ctx, `UPDATE tools SET proof = $2, proof_condition = $3, policy_version = policy_version + 1,
			updated_at = now() WHERE id = $1`, toolID, string(proof), condition); err != nil {
			return err
		}
		if out, err = toolByID(ctx, tx, toolID, false); err != nil {
			return err
		}
		if proof == approval.ProofPasskey {
			if err := withdrawStanding(ctx, tx, toolID, false); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE approvals SET proof_required = 'passkey'
				WHERE id IN (SELECT id FROM approvals WHERE tool_id = $1 AND status = 'pending' ORDER BY id FOR UPDATE)`, toolID); err != nil {
				return err
			}
		}
		if err := lapsePreapprovals(ctx, tx, approval.LapsePolicy, `pa.tool_id = $1`, toolID); err != nil {
			return err
		}
		detail := map[string]any{"before": proofDetail(before), "after": proofDetail(out)}
		if err := RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionPolicyChanged,
			Connector: out.Connector, Tool: out.Name, Detail: detail}); err != nil {
			return err
		}
		return outboxPolicyChanged(ctx, tx, out)
	})
	return out, translate("set tool proof", err)
}

func proofDetail(t Tool) map[string]any {
	d := policyDetail(t)
	d["proof"], d["proof_condition"] = t.Proof, t.ProofCondition
	return d
}

// refusePasskeyPreapproval refuses a playbook's pre-approval of a tool that
// requires a passkey. Why refuse rather than ask for the passkey: a
// pre-approval approves calls not made yet, whose arguments nobody has
// seen, so a signature could not cover them and would prove nothing about
// the call that runs. Runs are denied such calls (approval_unavailable).
func refusePasskeyPreapproval(ctx context.Context, tx pgx.Tx, s PairState) error {
	var proof string
	if err := tx.QueryRow(ctx, `SELECT proof FROM tools WHERE id = $1`, s.ToolID).Scan(&proof); err != nil {
		return err
	}
	if proof == string(approval.ProofPasskey) {
		return approval.Errorf(approval.KindUnprocessable, approval.CodeNotOffered,
			"%s requires a passkey to approve each call, so a playbook cannot pre-approve it: a passkey signs one call’s arguments, "+
				"which an unattended run has not produced yet. Nothing was pre-approved; remove the tool from the playbook, "+
				"or ask an admin to turn off its passkey requirement.", s.Label())
	}
	return nil
}
