package db

import (
	"context"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// ConnectorSync is a runtime's full description of one connector.
type ConnectorSync struct {
	Name        string
	DisplayName string
	Kind        string
	Tools       []ToolSync
}

// ToolSync is one tool in a catalog sync.
type ToolSync struct {
	Name             string
	DisplayName      string
	Description      string
	Annotations      approval.Annotations
	StandingApproval *bool
	// ShellArgument names the argument that holds a shell command line
	// ("" for none): its calls get the command parsed on the card.
	ShellArgument string
}

// Tool is a catalog tool with its policy.
type Tool struct {
	ID               int64      `db:"id"`
	Connector        string     `db:"connector"`
	Name             string     `db:"name"`
	DisplayName      string     `db:"display_name"`
	Description      string     `db:"description"`
	ReadOnlyHint     *bool      `db:"read_only_hint"`
	DestructiveHint  *bool      `db:"destructive_hint"`
	IdempotentHint   *bool      `db:"idempotent_hint"`
	OpenWorldHint    *bool      `db:"open_world_hint"`
	Mode             string     `db:"mode"`
	StandingApproval bool       `db:"standing_approval"`
	Condition        string     `db:"condition"`
	PolicyVersion    int        `db:"policy_version"`
	MaxGrantSeconds  *int64     `db:"max_grant_seconds"` // nil: no limit
	RetiredAt        *time.Time `db:"retired_at"`
	ConnectorDisplay string     `db:"connector_display"`
	ConnectorKind    string     `db:"connector_kind"`
	ConnectorDeleted bool       `db:"connector_deleted"`
	ShellArgument    string     `db:"shell_argument"` // the argument holding a shell command line, or ""
	// Matchable offers "Always allow calls like this" where standing
	// approval is not offered.
	Matchable bool `db:"matchable"`
	// Passkey step-up (issue 33): "passkey" when approving needs one, and
	// the CEL condition that limits it to some calls ("" for all).
	Proof          string `db:"proof"`
	ProofCondition string `db:"proof_condition"`
	// Deciders, DeciderTeam, Quorum and DecidersCondition are the tool's
	// approver rule (see approval.DeciderRule).
	Deciders          string  `db:"deciders"`
	DeciderTeam       *string `db:"decider_team"`
	Quorum            int     `db:"quorum"`
	DecidersCondition string  `db:"deciders_condition"`
	// The escalation rule (db/escalation.go): team and delay, or none.
	// Read with the policy (toolByID, ListPolicies), not by the check:
	// each item takes it from the tool as it is created.
	EscalateTo           string `db:"-"`
	EscalateAfterSeconds *int32 `db:"-"`
}

// Rule is the tool's approver rule.
func (t Tool) Rule() approval.DeciderRule {
	r := approval.DeciderRule{Deciders: approval.Deciders(t.Deciders), Quorum: t.Quorum}
	if t.DeciderTeam != nil {
		r.Team = *t.DeciderTeam
	}
	return r.Normal()
}

// RuleFor is the approver rule for a call of t with args: the deciders
// condition, when set, chooses the rule (approval.ChooseRule).
func (t Tool) RuleFor(args approval.Arguments, f ConditionFunc) approval.DeciderRule {
	return approval.ChooseRule(t.Rule(), evalCondition(t.DecidersCondition, args, f))
}

// Annotations are the tool's hints.
func (t Tool) Annotations() approval.Annotations {
	return approval.Annotations{ReadOnlyHint: t.ReadOnlyHint, DestructiveHint: t.DestructiveHint,
		IdempotentHint: t.IdempotentHint, OpenWorldHint: t.OpenWorldHint}
}

// Policy is the tool's policy.
func (t Tool) Policy() approval.Policy {
	return approval.Policy{Mode: approval.Mode(t.Mode), StandingApproval: t.StandingApproval,
		Condition: t.Condition, Version: t.PolicyVersion, MaxGrant: t.MaxGrant(), Matchable: t.Matchable,
		Rule: t.Rule(), DecidersCondition: t.DecidersCondition}
}

// MaxGrant is the longest a standing grant of the tool may last; zero means
// no limit.
func (t Tool) MaxGrant() time.Duration {
	if t.MaxGrantSeconds == nil {
		return 0
	}
	return time.Duration(*t.MaxGrantSeconds) * time.Second
}

const toolSelect = `SELECT t.id, t.connector, t.name, t.display_name, t.description, t.read_only_hint,
	t.destructive_hint, t.idempotent_hint, t.open_world_hint, t.mode, t.standing_approval, t.condition,
	t.policy_version, t.max_grant_seconds, t.retired_at, c.display_name AS connector_display, c.kind AS connector_kind,
	c.deleted_at IS NOT NULL AS connector_deleted, t.shell_argument, t.matchable, t.proof, t.proof_condition,
	t.deciders, t.decider_team, t.quorum, t.deciders_condition
	FROM tools t JOIN connectors c ON c.name = t.connector`

// SyncConnector upserts a connector and its full tool list. New tools get
// the default policy; existing tools keep theirs (a re-sync never loosens
// policy); tools missing from the list are retired.
func (d *DB) SyncConnector(ctx context.Context, actor approval.Actor, s ConnectorSync) error {
	return translate("sync connector", d.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO connectors (name, display_name, kind) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO UPDATE SET display_name = EXCLUDED.display_name, kind = EXCLUDED.kind,
				updated_at = now(), deleted_at = NULL`, s.Name, s.DisplayName, s.Kind); err != nil {
			return err
		}
		names := make([]string, 0, len(s.Tools))
		added := 0
		for _, t := range s.Tools {
			names = append(names, t.Name)
			inserted, _, err := upsertTool(ctx, tx, s.Name, t)
			if err != nil {
				return err
			}
			if inserted {
				added++
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE tools SET retired_at = now() WHERE connector = $1 AND retired_at IS NULL AND NOT (name = ANY($2))`,
			s.Name, names); err != nil {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionConnectorSynced, Connector: s.Name,
			Detail: map[string]any{"tools": len(s.Tools), "new_tools": added}})
	}))
}

// upsertTool adds a tool with the default policy for its annotations, or
// updates an existing one's texts and hints and brings it back if it was
// retired — never touching its policy, so a changed (untrusted) annotation
// cannot loosen what an admin set. It reports whether the tool is new and
// whether its annotations changed. The shell argument is the runtime's
// description of its tool, like its texts: a sync sets it.
func upsertTool(ctx context.Context, tx pgx.Tx, connector string, t ToolSync) (inserted, changed bool, err error) {
	p := approval.DefaultPolicy(t.Annotations, t.StandingApproval)
	a := t.Annotations
	err = tx.QueryRow(ctx, `
		INSERT INTO tools (connector, name, display_name, description, read_only_hint, destructive_hint,
			idempotent_hint, open_world_hint, mode, standing_approval, shell_argument, matchable)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11 <> '')
		ON CONFLICT (connector, name) DO UPDATE SET
			display_name = EXCLUDED.display_name, description = EXCLUDED.description,
			shell_argument = EXCLUDED.shell_argument,
			annotations_changed_at = CASE WHEN (tools.read_only_hint, tools.destructive_hint, tools.idempotent_hint, tools.open_world_hint)
				IS DISTINCT FROM (EXCLUDED.read_only_hint, EXCLUDED.destructive_hint, EXCLUDED.idempotent_hint, EXCLUDED.open_world_hint)
				THEN now() ELSE tools.annotations_changed_at END,
			read_only_hint = EXCLUDED.read_only_hint, destructive_hint = EXCLUDED.destructive_hint,
			idempotent_hint = EXCLUDED.idempotent_hint, open_world_hint = EXCLUDED.open_world_hint,
			retired_at = NULL, updated_at = now()
		RETURNING xmax = 0, annotations_changed_at IS NOT DISTINCT FROM now()`,
		connector, t.Name, t.DisplayName, t.Description, a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint,
		a.OpenWorldHint, string(p.Mode), p.StandingApproval, t.ShellArgument).Scan(&inserted, &changed)
	return inserted, changed && !inserted, err
}

// DeleteConnector marks a connector deleted; its tools keep their history
// and grants.
func (d *DB) DeleteConnector(ctx context.Context, actor approval.Actor, name string) error {
	return translate("delete connector", d.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE connectors SET deleted_at = now() WHERE name = $1 AND deleted_at IS NULL`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No connector named %q.", name)
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionConnectorDeleted, Connector: name})
	}))
}

// activeTool returns a tool that can be called: known, not retired, and of
// a connector that is not deleted. With lock, its row is held (shared)
// until commit, so a concurrent retirement or policy change waits. The
// check reads it without a lock: only a pending item needs the policy to
// hold until commit (holdToolPolicy), and every other outcome leaves
// nothing in flight that a later policy change must end.
func activeTool(ctx context.Context, tx pgx.Tx, connector, name string, lock bool) (Tool, error) {
	sql := toolSelect + ` WHERE t.connector = $1 AND t.name = $2 AND t.retired_at IS NULL AND c.deleted_at IS NULL`
	if lock {
		sql += ` FOR SHARE OF t`
	}
	rows, err := tx.Query(ctx, sql, connector, name)
	if err != nil {
		return Tool{}, err
	}
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Tool])
	if err == pgx.ErrNoRows {
		return Tool{}, approval.Errorf(approval.KindNotFound, approval.CodeUnknownTool,
			"The tool %s · %s is not in the catalog (or was retired). Sync the connector's tool list first.", connector, name)
	}
	return t, err
}
