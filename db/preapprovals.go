package db

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// ApprovalRequiredError refuses to enable, schedule or run a playbook whose
// required pairs lack a valid pre-approval.
type ApprovalRequiredError struct {
	Playbook    string
	Pairs       []PairState // the missing ones
	Fingerprint string      // the definition the pairs were worked out for
	// Changed reports a pre-approval refused because the definition is no
	// longer the one the owner was shown.
	Changed bool
}

func (e *ApprovalRequiredError) Error() string {
	return fmt.Sprintf("%s: %d tool(s) need the owner's approval", approval.CodePlaybookApproval, len(e.Pairs))
}

func asApprovalRequired(err error) *ApprovalRequiredError {
	var are *ApprovalRequiredError
	if errors.As(err, &are) {
		return are
	}
	return nil
}

// lapsePreapprovals ends live pre-approvals matched by where (whose
// arguments are args), with one audit line each.
func lapsePreapprovals(ctx context.Context, tx pgx.Tx, reason, where string, args ...any) error {
	switch reason {
	case approval.LapsePolicy, approval.LapseContent, approval.LapseOwner:
	default:
		return fmt.Errorf("lapse pre-approvals: unknown reason %q", reason)
	}
	rows, err := tx.Query(ctx, `UPDATE playbook_preapprovals pa SET lapsed_at = now(), lapse_reason = $`+strconv.Itoa(len(args)+1)+`
		FROM tools t WHERE t.id = pa.tool_id AND pa.revoked_at IS NULL AND pa.lapsed_at IS NULL AND `+where+`
		RETURNING pa.playbook_id, t.connector, t.name`, append(args, reason)...)
	if err != nil {
		return err
	}
	type lapsed struct{ playbook, connector, tool string }
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (lapsed, error) {
		var l lapsed
		err := r.Scan(&l.playbook, &l.connector, &l.tool)
		return l, err
	})
	if err != nil {
		return err
	}
	for _, l := range list {
		if err := RecordAudit(ctx, tx, approval.AuditEvent{Actor: approval.SystemActor, Action: approval.ActionPreapprovalLapsed,
			PlaybookID: l.playbook, Connector: l.connector, Tool: l.tool, Detail: map[string]any{"reason": reason}}); err != nil {
			return err
		}
		if err := outboxPreapprovalLapsed(ctx, tx, l.playbook, l.connector, l.tool, reason); err != nil {
			return err
		}
	}
	return nil
}

// PreApprove records the owner's pre-approval of every required pair that
// lacks one, under the premises that hold now. Only the owner may, and only
// for the definition they were shown: fingerprint must be the playbook's,
// read under its row lock, or nothing is approved and an
// *ApprovalRequiredError with Changed set carries the current pairs.
func (d *DB) PreApprove(ctx context.Context, owner User, id, fingerprint string) (int, error) {
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
		if fingerprint != p.Fingerprint {
			return &ApprovalRequiredError{Playbook: p.Name, Pairs: missing(states), Fingerprint: p.Fingerprint, Changed: true}
		}
		if err := refuseOthersDecide(ctx, tx, missing(states)); err != nil {
			return err
		}
		for _, s := range missing(states) {
			if err := refusePasskeyPreapproval(ctx, tx, s); err != nil { // passkey step-up (issue 33)
				return err
			}
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

// CodePreapprovalNeedsDeciders refuses a pre-approval of a tool whose
// approver rule names someone other than the playbook's owner alone.
const CodePreapprovalNeedsDeciders = "preapproval_needs_deciders"

// refuseOthersDecide refuses pre-approving pairs whose tool's rule is not
// the owner's alone (or may not be, by its condition): a pre-approval is
// the owner's consent, and those calls need a team's or several people's.
// Nothing is approved then; the message names who must decide.
func refuseOthersDecide(ctx context.Context, tx pgx.Tx, pairs []PairState) error {
	var who []string
	for _, s := range pairs {
		t, err := toolByID(ctx, tx, s.ToolID, false)
		if err != nil {
			return err
		}
		if r := t.Rule(); !r.IsOwner() {
			words := r.Words("the owner", "")
			if t.DecidersCondition != "" {
				words += " (when " + t.DecidersCondition + ")"
			}
			who = append(who, "“"+s.Label()+"” is decided by "+words)
		}
	}
	if len(who) == 0 {
		return nil
	}
	return approval.Errorf(approval.KindUnprocessable, CodePreapprovalNeedsDeciders,
		"Nothing was pre-approved: %s. A playbook owner cannot pre-approve a call that others must decide; "+
			"change the tool's rule, or leave the tool out of unattended runs.", strings.Join(who, "; "))
}
