// Package db is Countersign's Postgres adapter: the pool, migrations,
// transactions, the queries behind every screen and API call, and the
// LISTEN/NOTIFY fan-out. Exported methods own their transaction; lowercase
// helpers take a pgx.Tx.
package db

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is a Postgres pool with Countersign's queries.
// Expiry and every other time rule use the database's now(), so that all
// instances agree on one clock.
type DB struct {
	Pool *pgxpool.Pool

	groups writeGroups // what concurrent checks record, written together
	asking askingTools // tools whose checks read the turn's facts first
	reads  readGroups  // the first statements of concurrent checks, read together
	// factReads are reads for the checks of tools known to ask, with
	// their turn's facts.
	factReads readGroups

	factsApart atomic.Int64 // checks that read the turn's facts in a statement of their own
	knownUsers sync.Map     // subjects seen signed in (mayAsk)
}

// Open connects a pool to url and checks that the server answers.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("db: parse database URL: %w", err)
	}
	if cfg.MaxConns < 8 {
		cfg.MaxConns = 8
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("db: open pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("db: connect: %w", err)
	}
	return &DB{Pool: pool, groups: writeGroups{arrived: make(chan struct{}, 1), linger: groupLinger}, reads: readGroups{max: maxReaders()},
		factReads: readGroups{max: maxReaders(), facts: true}}, nil
}

// Close closes the pool.
func (d *DB) Close() { d.Pool.Close() }

// Ping reports whether the database answers.
func (d *DB) Ping(ctx context.Context) error { return d.Pool.Ping(ctx) }

// InTx runs fn in a transaction, committing when fn returns nil.
func (d *DB) InTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, d.Pool, fn)
}

// translate turns database errors that mean something to the domain into
// *approval.Error, and wraps everything else with op.
func translate(op string, err error) error {
	if err == nil {
		return nil
	}
	if approval.AsError(err) != nil {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "not found")
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return approval.Errorf(approval.KindConflict, "conflict", "already exists")
		case "22P02": // invalid text representation, e.g. a malformed UUID
			return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "not found")
		case "22021", "22P05":
			// A NUL or another character Postgres cannot store reached a
			// query: the edges refuse these, this is the last line.
			return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest,
				"The request holds a character that cannot be stored (such as NUL, U+0000).")
		}
	}
	return fmt.Errorf("db: %s: %w", op, err)
}

// isConstraintViolation reports whether err is a unique violation of the
// named constraint or index.
func isConstraintViolation(err error, name string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == name
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
