package db

import "context"

// PendingCountFor counts an owner's waiting items, as PendingFor lists
// them, for the count every page's title carries.
func (d *DB) PendingCountFor(ctx context.Context, subject string) (int, error) {
	var n int
	err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM approvals
		WHERE owner_subject = $1 AND status = 'pending' AND expires_at > now()`, subject).Scan(&n)
	return n, translate("count pending", err)
}
