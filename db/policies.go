package db

import (
	"context"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// PolicyRow is a tool on the admin's policies screen.
type PolicyRow struct {
	Tool
	AnnotationsChangedAt *time.Time `db:"annotations_changed_at"`
}

// ListPolicies returns every tool that is not retired, by connector.
func (d *DB) ListPolicies(ctx context.Context) ([]PolicyRow, error) {
	rows, err := d.Pool.Query(ctx, `SELECT t.id, t.connector, t.name, t.display_name, t.description, t.read_only_hint,
		t.destructive_hint, t.idempotent_hint, t.open_world_hint, t.mode, t.standing_approval, t.condition,
		t.policy_version, t.max_grant_seconds, t.retired_at, c.display_name AS connector_display, c.kind AS connector_kind,
		c.deleted_at IS NOT NULL AS connector_deleted, t.shell_argument, t.matchable, t.annotations_changed_at,
		t.proof, t.proof_condition, t.deciders, t.decider_team, t.quorum, t.deciders_condition
		FROM tools t JOIN connectors c ON c.name = t.connector
		WHERE t.retired_at IS NULL
		ORDER BY c.deleted_at IS NOT NULL, c.kind = 'builtin', c.display_name, t.display_name`)
	if err != nil {
		return nil, translate("list policies", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[PolicyRow])
	return list, translate("list policies", err)
}

// ToolByID returns a tool, retired or not.
func (d *DB) ToolByID(ctx context.Context, id int64) (Tool, error) {
	var t Tool
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) (err error) {
		t, err = toolByID(ctx, tx, id, false)
		return err
	})
	return t, translate("tool by id", err)
}

func toolByID(ctx context.Context, tx pgx.Tx, id int64, lock bool) (Tool, error) {
	sql := toolSelect + ` WHERE t.id = $1`
	if lock {
		sql += ` FOR UPDATE OF t`
	}
	rows, err := tx.Query(ctx, sql, id)
	if err != nil {
		return Tool{}, err
	}
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Tool])
	if err == pgx.ErrNoRows {
		return Tool{}, approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such tool.")
	}
	if err == nil {
		err = readEscalation(ctx, tx, &t)
	}
	return t, err
}

// Impact counts what a policy change would end: grants valid now, which
// every change of the tool's policy version lapses, and the calls in flight
// that a block ends.
type Impact struct {
	AlwaysGrants       int
	ConversationGrants int
	PreApprovals       int // playbook pre-approvals
	WaitingCalls       int // pending items: a block cancels them
	ApprovedCalls      int // approved, not yet claimed: after a block they will not run
}

// Total is the number of approvals that would lapse.
func (i Impact) Total() int { return i.AlwaysGrants + i.ConversationGrants + i.PreApprovals }

// Calls is the number of calls in flight that a block ends.
func (i Impact) Calls() int { return i.WaitingCalls + i.ApprovedCalls }

// PolicyImpact counts the tool's standing grants that are valid now and its
// calls in flight.
func (d *DB) PolicyImpact(ctx context.Context, toolID int64) (Impact, error) {
	var i Impact
	err := d.Pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE g.conversation_id IS NULL), count(*) FILTER (WHERE g.conversation_id IS NOT NULL)
		FROM standing_grants g JOIN tools t ON t.id = g.tool_id
		WHERE g.tool_id = $1 AND g.revoked_at IS NULL AND g.policy_version = t.policy_version
		  AND (t.standing_approval OR (g.scope IS NOT NULL AND t.matchable))
		  AND (g.expires_at IS NULL OR g.expires_at > now())`,
		toolID).Scan(&i.AlwaysGrants, &i.ConversationGrants)
	if err != nil {
		return i, translate("policy impact", err)
	}
	err = d.Pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE status = 'pending' AND expires_at > now()), count(*) FILTER (WHERE status = 'approved')
		FROM approvals WHERE tool_id = $1 AND status IN ('pending', 'approved')`, toolID).Scan(&i.WaitingCalls, &i.ApprovedCalls)
	if err != nil {
		return i, translate("policy impact", err)
	}
	err = d.Pool.QueryRow(ctx, `
		SELECT count(*) FROM playbook_preapprovals pa JOIN tools t ON t.id = pa.tool_id JOIN playbooks p ON p.id = pa.playbook_id
		WHERE pa.tool_id = $1 AND pa.revoked_at IS NULL AND pa.lapsed_at IS NULL AND pa.policy_version = t.policy_version
		  AND pa.fingerprint = p.fingerprint AND pa.owner_subject = p.owner_subject`, toolID).Scan(&i.PreApprovals)
	return i, translate("policy impact", err)
}

// UpdatePolicy changes a tool's policy: the version goes up (so every
// standing grant given under the old rules lapses at once), and the change
// is audited with before and after, in one transaction. expectVersion, when
// not zero, guards against saving over someone else's change. When the new
// mode blocks, the same transaction ends the tool's calls in flight: pending
// items and approved ones not yet claimed become cancelled with
// blocked_by_policy, each audited as cancelled by actor, and their waiters
// wake (an admin's block wins over everything in flight). When standing
// approval is not offered any more, the tool's pending items stop offering
// "Allow in this conversation" and "Always allow" (see withdrawStanding).
func (d *DB) UpdatePolicy(ctx context.Context, actor approval.Actor, toolID int64, expectVersion int, p approval.Policy) (Tool, error) {
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
		if err := p.Rule.Validate(); err != nil {
			return err
		}
		rule := p.Rule.Normal()
		if rule.Team != "" {
			known, err := teamExists(ctx, tx, rule.Team)
			if err != nil {
				return err
			}
			if !known {
				return approval.Errorf(approval.KindUnprocessable, approval.CodeUnknownDeciderTeam, "There is no team named %q.", rule.Team)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE tools SET mode = $2, standing_approval = $3, condition = $4,
			max_grant_seconds = $5, matchable = $6, deciders = $7, decider_team = NULLIF($8, ''), quorum = $9,
			deciders_condition = $10, policy_version = policy_version + 1, updated_at = now() WHERE id = $1`,
			toolID, string(p.Mode), p.StandingApproval, p.Condition, maxGrantSeconds(p.MaxGrant), p.Matchable,
			string(rule.Deciders), rule.Team, rule.Quorum, p.DecidersCondition); err != nil {
			return err
		}
		if err := setEscalation(ctx, tx, toolID, p.Escalation); err != nil {
			return err
		}
		if out, err = toolByID(ctx, tx, toolID, false); err != nil {
			return err
		}
		// The items' rows are locked before any audit line is written, as
		// every other writer does, so that no two wait on each other.
		blocked := ending{status: approval.StatusCancelled, code: approval.CodeBlockedByPolicy,
			action: approval.ActionCancelled, actor: actor, approved: true}
		var ended []string
		if p.Blocks() {
			if ended, err = endItems(ctx, tx, blocked, `a.tool_id = $1`, toolID); err != nil {
				return err
			}
		}
		if !p.StandingApproval {
			if err := withdrawStanding(ctx, tx, toolID, p.Matchable); err != nil {
				return err
			}
		}
		if err := lapsePreapprovals(ctx, tx, approval.LapsePolicy, `pa.tool_id = $1`, toolID); err != nil {
			return err
		}
		detail := map[string]any{"before": policyDetail(before), "after": policyDetail(out)}
		if p.Blocks() {
			detail["calls_stopped"] = len(ended)
		}
		if err := RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionPolicyChanged,
			Connector: out.Connector, Tool: out.Name, Detail: detail}); err != nil {
			return err
		}
		if err := outboxPolicyChanged(ctx, tx, out); err != nil {
			return err
		}
		_, err = announceEnded(ctx, tx, blocked, ended)
		return err
	})
	return out, translate("update policy", err)
}

// standingDecisions are the answers that only a tool offering standing
// approval has.
var standingDecisions = []string{string(approval.ApproveConversation), string(approval.AlwaysAllow), string(approval.AlwaysMatching)}

// withdrawStanding removes the standing answers from the tool's pending
// items, inside the policy change's transaction, and pokes their owners:
// the server decides the buttons, and a button it would refuse is not
// drawn (a reload shows the item without them). The rows are locked in id
// order, as endItems does, so that this never deadlocks with a sweep.
func withdrawStanding(ctx context.Context, tx pgx.Tx, toolID int64, matchable bool) error {
	withdrawn := standingDecisions
	if matchable { // "Always allow calls like this" stays offered
		withdrawn = standingDecisions[:2]
	}
	rows, err := tx.Query(ctx, `UPDATE approvals u
		SET available_decisions = ARRAY(SELECT d FROM unnest(u.available_decisions) d WHERE NOT d = ANY($2::text[]))
		WHERE u.status = 'pending' AND u.id IN (SELECT a.id FROM approvals a
			WHERE a.tool_id = $1 AND a.status = 'pending' AND a.available_decisions && $2::text[] ORDER BY a.id FOR UPDATE)
		RETURNING u.id::text, u.owner_subject, COALESCE(u.decider_team, ''), COALESCE(u.owner_team, '')`, toolID, withdrawn)
	if err != nil {
		return err
	}
	changes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Change, error) {
		var a Approval
		err := r.Scan(&a.ID, &a.OwnerSubject, &a.DeciderTeam, &a.OwnerTeam)
		return changeOf(a), err
	})
	if err != nil {
		return err
	}
	return notifyMany(ctx, tx, changes)
}

func policyDetail(t Tool) map[string]any {
	d := map[string]any{"mode": t.Mode, "standing_approval": t.StandingApproval, "condition": t.Condition, "version": t.PolicyVersion,
		"matchable": t.Matchable}
	if r := t.Rule(); !r.IsOwner() || t.DecidersCondition != "" {
		d["deciders"], d["decider_team"], d["quorum"], d["deciders_condition"] = string(r.Deciders), r.Team, r.Quorum, t.DecidersCondition
	}
	if t.MaxGrantSeconds != nil {
		d["max_grant_seconds"] = *t.MaxGrantSeconds
	}
	escalationDetail(t, d)
	return d
}

// maxGrantSeconds stores a cap: NULL for no limit.
func maxGrantSeconds(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	s := int64(d / time.Second)
	return &s
}

// SetToolPolicy changes the policy of the tool named connector/name.
func (d *DB) SetToolPolicy(ctx context.Context, actor approval.Actor, connector, name string, p approval.Policy) (Tool, error) {
	var id int64
	if err := d.Pool.QueryRow(ctx, `SELECT id FROM tools WHERE connector = $1 AND name = $2`, connector, name).Scan(&id); err != nil {
		return Tool{}, translate("set tool policy", err)
	}
	return d.UpdatePolicy(ctx, actor, id, 0, p)
}
