package db

import "context"

// PendingCountFor counts the waiting items subject may decide, as
// PendingFor lists them, for the count every page's title carries.
func (d *DB) PendingCountFor(ctx context.Context, subject string) (int, error) {
	var n int
	err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM approvals a
		WHERE a.status = 'pending' AND a.expires_at > now() AND `+mayDecidePendingSQL("$1"), subject).Scan(&n)
	return n, translate("count pending", err)
}
