package db

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// WaitingOnOthers lists the calls of viewer's agents — their own keys' and
// their teams' keys' (Activity's scope, joined by the key's id) — that are
// waiting for someone else's answer: viewer may not decide them, by the
// one predicate. Oldest first, at most PendingLimit. The calls viewer may
// decide are PendingFor's.
func (d *DB) WaitingOnOthers(ctx context.Context, viewer User) ([]Approval, error) {
	list, err := collectApprovals(d.Pool.Query(ctx, approvalSelect+`
		WHERE a.status = 'pending' AND a.expires_at > now()
		  AND (a.owner_subject = $1 OR (a.owner_subject = '' AND EXISTS (SELECT 1 FROM api_keys k
				JOIN team_members m ON m.team = k.team WHERE m.subject = $1 AND k.id = a.api_key_id)))
		  AND NOT `+mayDecideSQL("$1")+`
		ORDER BY a.created_at, a.id LIMIT $2`, viewer.Subject, PendingLimit))
	return list, translate("waiting on others", err)
}

// MayOpen reports which of the items ids viewer may open (their request
// page), by the one predicate: Activity links a call to its request page
// only where the page will not answer 404. An id that is not an item's is
// left out.
func (d *DB) MayOpen(ctx context.Context, viewer string, ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := d.Pool.Query(ctx, `SELECT a.id::text FROM approvals a WHERE a.id = ANY($1::uuid[]) AND `+mayDecideSQL("$2"), ids, viewer)
	if err != nil {
		return nil, translate("may open", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, translate("may open", err)
	}
	for _, id := range list {
		out[id] = true
	}
	return out, nil
}
