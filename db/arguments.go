package db

import (
	"context"
	"errors"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// FullArguments returns the full argument text of a pending item to whoever
// may decide it. Anyone else, and anyone at all once the item is no longer waiting
// (decided, ended, or due), gets not found: the text is kept only while a
// decision can still be made.
func (d *DB) FullArguments(ctx context.Context, id, subject string) (approval.Arguments, error) {
	var raw []byte
	err := d.Pool.QueryRow(ctx, `SELECT x.arguments FROM approval_arguments x JOIN approvals a ON a.id = x.approval_id
		WHERE a.id = $1::uuid AND `+mayDecideSQL("$2")+` AND a.status = 'pending' AND a.expires_at > now()`, id, subject).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) || approval.KindOf(translate("", err)) == approval.KindNotFound {
		return approval.Arguments{}, approval.Errorf(approval.KindNotFound, approval.CodeNotFound,
			"The full text is kept only while the request waits for your answer.")
	}
	if err != nil {
		return approval.Arguments{}, translate("full arguments", err)
	}
	return approval.ParseArguments(string(raw)), nil
}
