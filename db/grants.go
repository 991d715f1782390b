package db

import (
	"context"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// Why a standing grant no longer applies.
const (
	LapsedPolicyChanged = "Permission settings changed"
	LapsedNotOffered    = "No longer offered"
	LapsedEnded         = "Its time ran out"
)

// StandingGrant is one of a user's "Always allow" or conversation grants.
type StandingGrant struct {
	ID               int64      `db:"id"`
	UserSubject      string     `db:"user_subject"`
	ToolID           int64      `db:"tool_id"`
	ConversationID   *string    `db:"conversation_id"`
	PolicyVersion    int        `db:"policy_version"`
	ApprovalID       *string    `db:"approval_id"`
	CreatedAt        time.Time  `db:"created_at"`
	LastUsedAt       *time.Time `db:"last_used_at"`
	Connector        string     `db:"connector"`
	Tool             string     `db:"tool"`
	ToolDisplay      string     `db:"tool_display"`
	ConnectorDisplay string     `db:"connector_display"`
	ConnectorKind    string     `db:"connector_kind"`
	ConnectorDeleted bool       `db:"connector_deleted"`
	ToolVersion      int        `db:"tool_version"`
	ToolStanding     bool       `db:"tool_standing"`
	ApprovalTurn     *string    `db:"approval_turn"`
	ExpiresAt        *time.Time `db:"expires_at"` // nil: until revoked or the policy changes
	Ended            bool       `db:"ended"`      // its end has passed (by the database's clock)
	// ConversationTitle is the runtime's label for the conversation the
	// grant came from, if it sent one.
	ConversationTitle string `db:"conversation_title"`
	// ScopeWords says what a scoped grant ("Always allow calls like this")
	// covers, as the person confirmed it; "" for any other grant.
	ScopeWords string `db:"scope_words"`
	// ScopeData is a scoped grant's scope as stored (JSON); nil otherwise.
	ScopeData []byte `db:"scope_data"`
	// HasScope is set for a scoped grant.
	HasScope bool `db:"has_scope"`
	// ToolMatchable is whether the tool offers scoped grants without
	// standing approval.
	ToolMatchable bool `db:"tool_matchable"`
}

// Lapsed says why the grant no longer applies, or "" while it is active.
func (g StandingGrant) Lapsed() string {
	switch {
	case g.Ended:
		return LapsedEnded
	case g.PolicyVersion != g.ToolVersion:
		return LapsedPolicyChanged
	case !g.ToolStanding && !(g.HasScope && g.ToolMatchable):
		return LapsedNotOffered
	}
	return ""
}

// Always reports whether this is an "Always allow" grant, scoped or not.
func (g StandingGrant) Always() bool { return g.ConversationID == nil }

// Covering says exactly what a scoped grant covers, as it is judged today
// (approval.CoveringWords); "" for any other grant.
func (g StandingGrant) Covering() string { return approval.CoveringWords(g.ScopeData, g.ScopeWords) }

// Scoped reports whether this is an "Always allow calls like this" grant.
func (g StandingGrant) Scoped() bool { return g.HasScope }

const grantSelect = `SELECT g.id, g.user_subject, g.tool_id, g.conversation_id, g.policy_version, g.approval_id::text AS approval_id,
	g.created_at, g.last_used_at, t.connector, t.name AS tool, t.display_name AS tool_display,
	c.display_name AS connector_display, c.kind AS connector_kind, c.deleted_at IS NOT NULL AS connector_deleted,
	t.policy_version AS tool_version, t.standing_approval AS tool_standing, a.turn_id AS approval_turn,
	g.expires_at, COALESCE(g.expires_at <= now(), false) AS ended, COALESCE(a.conversation_title, '') AS conversation_title,
	g.scope_words, g.scope AS scope_data, g.scope IS NOT NULL AS has_scope, t.matchable AS tool_matchable
	FROM standing_grants g JOIN tools t ON t.id = g.tool_id JOIN connectors c ON c.name = t.connector
	LEFT JOIN approvals a ON a.id = g.approval_id`

// GrantsFor lists a user's grants that were not revoked or cleared.
func (d *DB) GrantsFor(ctx context.Context, subject string) ([]StandingGrant, error) {
	rows, err := d.Pool.Query(ctx, grantSelect+` WHERE g.user_subject = $1 AND g.revoked_at IS NULL
		ORDER BY c.deleted_at IS NOT NULL, c.kind = 'builtin', c.display_name, t.display_name, g.conversation_id NULLS FIRST, g.id DESC`, subject)
	if err != nil {
		return nil, translate("list grants", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[StandingGrant])
	return list, translate("list grants", err)
}

// RevokeGrants revokes the user's grants matched by where (with its args
// after the subject) and audits each; it returns how many. The next check
// no longer sees them.
func (d *DB) revokeGrants(ctx context.Context, user User, how string, where string, args ...any) (int, error) {
	n := 0
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, grantSelect+` WHERE g.user_subject = $1 AND g.revoked_at IS NULL AND `+where+` FOR UPDATE OF g`,
			append([]any{user.Subject}, args...)...)
		if err != nil {
			return err
		}
		list, err := pgx.CollectRows(rows, pgx.RowToStructByName[StandingGrant])
		if err != nil || len(list) == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE standing_grants SET revoked_at = now() WHERE id = ANY($1)`, grantIDs(list)); err != nil {
			return err
		}
		n = len(list)
		return RecordAuditMany(ctx, tx, grantEvents(list, user.Actor(), approval.ActionGrantRevoked, how))
	})
	return n, translate("revoke grants", err)
}

func grantIDs(list []StandingGrant) []int64 {
	ids := make([]int64, len(list))
	for i, g := range list {
		ids[i] = g.ID
	}
	return ids
}

// grantEvents are the audit lines of action on each grant of list, with
// how it came about when how is set.
func grantEvents(list []StandingGrant, actor approval.Actor, action, how string) []approval.AuditEvent {
	evs := make([]approval.AuditEvent, len(list))
	for i, g := range list {
		detail := map[string]any{"grant_id": g.ID, "kind": grantKind(g)}
		if how != "" {
			detail["how"] = how
		}
		evs[i] = approval.AuditEvent{Actor: actor, Action: action, Connector: g.Connector, Tool: g.Tool, Detail: detail}
		if g.ConversationID != nil {
			evs[i].ConversationID = *g.ConversationID
		}
	}
	return evs
}

func grantKind(g StandingGrant) string {
	if g.Scoped() {
		return "scoped"
	}
	if g.Always() {
		return "always"
	}
	return "conversation"
}

// RevokeGrant revokes one of the user's grants; another user's grant is
// not found.
func (d *DB) RevokeGrant(ctx context.Context, user User, id int64) error {
	n, err := d.revokeGrants(ctx, user, "revoked", `g.id = $2`, id)
	if err == nil && n == 0 {
		err = approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such grant.")
	}
	return err
}

// RevokeConnectorGrants revokes all of the user's grants for a connector.
func (d *DB) RevokeConnectorGrants(ctx context.Context, user User, connector string) (int, error) {
	return d.revokeGrants(ctx, user, "revoked with the connector", `t.connector = $2`, connector)
}

// lapsedWhere matches grants that no longer apply: given under another
// policy version, for a tool that no longer offers standing approval, or
// past their end.
const lapsedWhere = `(g.policy_version <> t.policy_version OR NOT (t.standing_approval OR (g.scope IS NOT NULL AND t.matchable))
	OR g.expires_at <= now())`

// ClearLapsedGrants removes the user's grants that no longer apply.
func (d *DB) ClearLapsedGrants(ctx context.Context, user User) (int, error) {
	return d.revokeGrants(ctx, user, "cleared (lapsed)", lapsedWhere)
}

// ClearLapsedGrant removes one of the user's grants that no longer applies;
// an active grant, or another user's, is not found (an active grant is
// revoked, not cleared).
func (d *DB) ClearLapsedGrant(ctx context.Context, user User, id int64) error {
	n, err := d.revokeGrants(ctx, user, "cleared (lapsed)", `g.id = $2 AND `+lapsedWhere, id)
	if err == nil && n == 0 {
		err = approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such lapsed grant.")
	}
	return err
}

// grantLength resolves the length of a standing grant asked for against
// the tool's cap, read in the deciding transaction.
func grantLength(ctx context.Context, tx pgx.Tx, toolID int64, requested string) (time.Duration, error) {
	var secs *int64
	if err := tx.QueryRow(ctx, `SELECT max_grant_seconds FROM tools WHERE id = $1`, toolID).Scan(&secs); err != nil {
		return 0, err
	}
	var limit time.Duration
	if secs != nil {
		limit = time.Duration(*secs) * time.Second
	}
	return approval.GrantLength(requested, limit)
}

// ExpireGrants records the end of standing grants whose time is up: each
// is marked ended and audited "grant expired", once, at most limit at a
// time, in one transaction of three statements that skips grants another
// transaction holds. A grant stops applying at its end whether or not this
// has run yet (the check's turnFactsSQL compares the end with now()).
func (d *DB) ExpireGrants(ctx context.Context, limit int) (int, error) {
	n := 0
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, grantSelect+` WHERE g.id IN (SELECT id FROM standing_grants
			WHERE expires_at <= now() AND ended_at IS NULL AND revoked_at IS NULL
			ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)`, limit)
		if err != nil {
			return err
		}
		list, err := pgx.CollectRows(rows, pgx.RowToStructByName[StandingGrant])
		if err != nil || len(list) == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE standing_grants SET ended_at = now() WHERE id = ANY($1)`, grantIDs(list)); err != nil {
			return err
		}
		n = len(list)
		return RecordAuditMany(ctx, tx, grantEvents(list, approval.SystemActor, approval.ActionGrantExpired, ""))
	})
	return n, translate("expire grants", err)
}
