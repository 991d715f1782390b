package db

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// execer is what the write helpers need. A transaction runs each statement
// at once; a batchExec queues it, and the batch sends every queued
// statement in one round trip, as one implicit transaction: the first error
// rolls back all of them.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// querier is what read helpers need: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// batchSender is a pool (each batch one implicit transaction) or an open
// transaction.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

type batchExec struct{ b *pgx.Batch }

func (q batchExec) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	q.b.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

// sendBatch runs b on a pooled connection and returns the first error.
func (d *DB) sendBatch(ctx context.Context, b *pgx.Batch) error {
	return d.Pool.SendBatch(ctx, b).Close()
}
