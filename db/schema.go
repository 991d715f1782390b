package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrNoSchema is returned when a database does not hold Countersign's
// schema, or holds an older version of it.
var ErrNoSchema = errors.New("db: the database does not hold Countersign's schema")

// CheckSchema reports whether the database at url holds Countersign's
// schema at the version this binary knows, and changes nothing. Commands
// other than migrate, serve and dev use it, so that pointing one of them at
// the wrong database (the cluster's "postgres", say) is refused with a
// message instead of quietly creating Countersign's tables there.
func CheckSchema(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("db: connect: %w", err)
	}
	defer conn.Close(ctx)
	cfg := conn.Config()
	where := fmt.Sprintf("database %q on %s:%d", cfg.Database, cfg.Host, cfg.Port)
	var table *string
	if err := conn.QueryRow(ctx, `SELECT to_regclass('goose_db_version')::text`).Scan(&table); err != nil {
		return fmt.Errorf("db: read schema version: %w", err)
	}
	var version int64
	if table != nil {
		if err := conn.QueryRow(ctx, `SELECT COALESCE(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&version); err != nil {
			return fmt.Errorf("db: read schema version: %w", err)
		}
	}
	switch known := KnownSchemaVersion(); {
	case version == 0:
		return fmt.Errorf("%w: %s has no Countersign tables. Check COUNTERSIGN_DATABASE_URL names the database countersign serve uses; "+
			"to set up a new one, run \"countersign migrate\" with it first", ErrNoSchema, where)
	case version < known:
		return fmt.Errorf("%w: %s is at schema version %d, this binary needs %d. Run \"countersign migrate\" first", ErrNoSchema, where, version, known)
	case version > known:
		return fmt.Errorf("%w (%s at %d, binary knows up to %d)", ErrSchemaTooNew, where, version, known)
	}
	return nil
}
