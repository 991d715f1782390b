package db

import (
	"context"
	"time"
)

// sealBatch bounds one sealing transaction.
const sealBatch = 10000

// SealAudit chains up to max committed, unsealed events in one transaction
// and returns how many it sealed; -1 means another sealer (in this or
// another instance) holds the sealer's lock. Events are sealed in
// (transaction id, id) order, and only below the snapshot horizon, so the
// order is final when it is given (migration 00010).
func (d *DB) SealAudit(ctx context.Context, max int) (int, error) {
	var n int
	err := d.Pool.QueryRow(ctx, `SELECT audit_seal($1)`, max).Scan(&n)
	return n, translate("seal audit", err)
}

// VacuumAuditQueue vacuums the queue of lines waiting for their seal,
// unless another session is vacuuming it.
func (d *DB) VacuumAuditQueue(ctx context.Context) error {
	_, err := d.Pool.Exec(ctx, `VACUUM (SKIP_LOCKED) audit_pending`)
	return translate("vacuum audit queue", err)
}

// SealAll seals every event committed before the call, waiting for older
// transactions still open to finish; tests and the command line use it.
func (d *DB) SealAll(ctx context.Context) error {
	var target string
	if err := d.Pool.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text`).Scan(&target); err != nil {
		return translate("seal all", err)
	}
	for {
		if _, err := d.SealAudit(ctx, sealBatch); err != nil {
			return err
		}
		var left bool
		if err := d.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM audit_unsealed WHERE xid < $1::xid8)`,
			target).Scan(&left); err != nil {
			return translate("seal all", err)
		}
		if !left {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
