package db

import (
	"context"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// ToolScopedGrant is a scoped grant as an admin sees it on the tool's
// policy page: the grant and whose it is.
type ToolScopedGrant struct {
	StandingGrant
	UserName string `db:"user_name"`
}

// ScopedGrantsForTool lists the tool's scoped grants that apply now (not
// revoked, given under the current policy version, not ended), every
// user's, newest first.
func (d *DB) ScopedGrantsForTool(ctx context.Context, toolID int64) ([]ToolScopedGrant, error) {
	rows, err := d.Pool.Query(ctx, `SELECT q.*, COALESCE(NULLIF(u.name, ''), NULLIF(u.email, ''), q.user_subject) AS user_name
		FROM (`+grantSelect+` WHERE g.tool_id = $1 AND g.scope IS NOT NULL AND g.revoked_at IS NULL AND NOT COALESCE(`+lapsedWhere+`, false)) q
		LEFT JOIN LATERAL (SELECT name, email FROM users WHERE subject = q.user_subject ORDER BY id LIMIT 1) u ON true
		ORDER BY q.id DESC`, toolID)
	if err != nil {
		return nil, translate("list scoped grants", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[ToolScopedGrant])
	return list, translate("list scoped grants", err)
}

// AdminRevokeScopedGrant revokes one of the tool's scoped grants, whoever
// it belongs to, and audits it with the admin as actor; a grant of another
// tool, or one not scoped, is not found.
func (d *DB) AdminRevokeScopedGrant(ctx context.Context, admin User, toolID, grantID int64) error {
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, grantSelect+` WHERE g.id = $1 AND g.tool_id = $2 AND g.scope IS NOT NULL AND g.revoked_at IS NULL
			FOR UPDATE OF g`, grantID, toolID)
		if err != nil {
			return err
		}
		list, err := pgx.CollectRows(rows, pgx.RowToStructByName[StandingGrant])
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such grant.")
		}
		if _, err := tx.Exec(ctx, `UPDATE standing_grants SET revoked_at = now() WHERE id = $1`, grantID); err != nil {
			return err
		}
		evs := grantEvents(list, admin.Actor(), approval.ActionGrantRevoked, "revoked by an admin")
		evs[0].Detail["owner"] = list[0].UserSubject
		return RecordAuditMany(ctx, tx, evs)
	})
	return translate("revoke scoped grant", err)
}
