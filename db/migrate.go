package db

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/countersign/countersign/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// migrationLockID is the advisory lock key under which migrations run, so
// that several processes starting together migrate once.
const migrationLockID = 0x636f756e7465 // "counte"

// DefaultMigrationLockTimeout is how long a process waits for another
// one's migrations before it gives up (COUNTERSIGN_MIGRATION_LOCK_TIMEOUT).
const DefaultMigrationLockTimeout = 10 * time.Minute

// migrationApplicationName is the application_name of the connections that
// migrate, so that a waiting process (and pg_stat_activity) can say who
// holds the lock.
const migrationApplicationName = "countersign migrate"

// MigrateOptions says how Migrate reports and how long it waits.
type MigrateOptions struct {
	// Log receives which migration runs and how long it took, that the
	// process waits for another one's migrations, and the migrations' own
	// notices (a batched backfill's progress). Nil: nothing is logged.
	Log *slog.Logger
	// LockTimeout bounds the wait for another process's migrations; zero
	// means DefaultMigrationLockTimeout.
	LockTimeout time.Duration
	// UpTo stops at this version (tests that build an older schema); zero:
	// every embedded migration.
	UpTo int64
	// Heartbeat is how often a migration still running is logged again;
	// zero: every ten seconds.
	Heartbeat time.Duration
}

// Migrate applies every embedded migration the database lacks, under an
// advisory lock. It refuses to touch a schema newer than this binary knows.
func Migrate(ctx context.Context, url string) (applied int, err error) {
	return MigrateWith(ctx, url, MigrateOptions{})
}

// openLocked opens url for migrating, refuses a schema this binary does
// not know, and takes the migration lock (waiting as opt says); release
// lets the lock and the connection go.
func openLocked(ctx context.Context, url string, opt MigrateOptions) (*goose.Provider, *slog.Logger, func(), error) {
	log := opt.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	sqlDB, err := openMigrationDB(url, log)
	if err != nil {
		return nil, nil, nil, err
	}
	p, err := newProvider(sqlDB)
	if err == nil {
		err = checkSchemaKnown(ctx, p)
	}
	if err != nil {
		sqlDB.Close()
		return nil, nil, nil, err
	}
	unlock, err := migrationLock(ctx, sqlDB, log, opt.LockTimeout)
	if err != nil {
		sqlDB.Close()
		return nil, nil, nil, err
	}
	return p, log, func() { unlock(); sqlDB.Close() }, nil
}

// MigrateWith is Migrate with progress reported to opt.Log and the lock
// wait bounded by opt.LockTimeout. Each migration is logged when it starts
// and when it ends, with its duration; one that takes long is logged again
// every opt.Heartbeat.
func MigrateWith(ctx context.Context, url string, opt MigrateOptions) (applied int, err error) {
	p, log, release, err := openLocked(ctx, url, opt)
	if err != nil {
		return 0, err
	}
	defer release()
	heartbeat := opt.Heartbeat
	if heartbeat <= 0 {
		heartbeat = 10 * time.Second
	}
	for {
		next, ok, err := nextPending(ctx, p)
		if err != nil {
			return applied, err
		}
		if !ok || (opt.UpTo > 0 && next.Version > opt.UpTo) {
			return applied, nil
		}
		name := migrationName(next)
		log.Info("applying migration", "migration", name)
		start := time.Now()
		stop := make(chan struct{})
		go func() {
			t := time.NewTicker(heartbeat)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					log.Info("migration still running", "migration", name, "running_for", time.Since(start).Round(time.Second).String())
				}
			}
		}()
		_, err = p.ApplyVersion(ctx, next.Version, true)
		close(stop)
		if err != nil {
			log.Error("migration failed", "migration", name, "after", time.Since(start).Round(time.Millisecond).String())
			return applied, fmt.Errorf("db: apply migration %s: %w", name, err)
		}
		applied++
		log.Info("migration applied", "migration", name, "took", time.Since(start).Round(time.Millisecond).String())
	}
}

// openMigrationDB opens the connections that migrate: named, and with the
// database's notices (RAISE NOTICE in a migration) sent to log.
func openMigrationDB(url string, log *slog.Logger) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("db: parse database URL: %w", err)
	}
	cfg.RuntimeParams["application_name"] = migrationApplicationName
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if n.Severity == "NOTICE" || n.Severity == "WARNING" || n.Severity == "INFO" {
			log.Info("migration progress", "message", n.Message)
		}
	}
	return stdlib.OpenDB(*cfg), nil
}

func newProvider(sqlDB *sql.DB) (*goose.Provider, error) {
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	if err != nil {
		return nil, fmt.Errorf("db: migrations: %w", err)
	}
	return p, nil
}

// nextPending is the oldest migration the database lacks.
func nextPending(ctx context.Context, p *goose.Provider) (*goose.Source, bool, error) {
	st, err := p.Status(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("db: read migration status: %w", err)
	}
	for _, s := range st {
		if s.State == goose.StatePending {
			return s.Source, true, nil
		}
	}
	return nil, false, nil
}

func migrationName(s *goose.Source) string {
	name := s.Path
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// migrationLock takes the session advisory lock under which migrations
// run, on a connection of its own that holds it until unlock. While
// another process holds it, the wait is logged (who holds it, for how
// long) every few seconds, and it ends with an error after timeout.
func migrationLock(ctx context.Context, sqlDB *sql.DB, log *slog.Logger, timeout time.Duration) (func(), error) {
	if timeout <= 0 {
		timeout = DefaultMigrationLockTimeout
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: migration lock: %w", err)
	}
	unlock := func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLockID))
		_ = conn.Close()
	}
	start := time.Now()
	lastLog := time.Time{}
	for {
		var locked bool
		if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, int64(migrationLockID)).Scan(&locked); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("db: migration lock: %w", err)
		}
		if locked {
			if !lastLog.IsZero() {
				log.Info("migration lock taken", "waited", time.Since(start).Round(time.Millisecond).String())
			}
			return unlock, nil
		}
		waited := time.Since(start)
		if waited >= timeout {
			_ = conn.Close()
			return nil, fmt.Errorf("%w: waited %s (COUNTERSIGN_MIGRATION_LOCK_TIMEOUT) while %s", ErrMigrationLockTimeout,
				timeout, lockHolder(ctx, conn))
		}
		if lastLog.IsZero() || time.Since(lastLog) >= 5*time.Second {
			lastLog = time.Now()
			log.Info("waiting for another process's migrations", "holder", lockHolder(ctx, conn),
				"waited", waited.Round(time.Second).String(), "gives_up_after", timeout.String())
		}
		select {
		case <-ctx.Done():
			_ = conn.Close()
			return nil, ctx.Err()
		case <-time.After(min(time.Second, timeout-waited)):
		}
	}
}

// ErrMigrationLockTimeout is returned when another process held the
// migration lock for longer than the configured wait.
var ErrMigrationLockTimeout = errors.New("db: another process is still migrating the database")

// lockHolder says which session holds the migration lock and since when,
// as far as pg_stat_activity shows it.
func lockHolder(ctx context.Context, conn *sql.Conn) string {
	var pid int
	var app, addr string
	var since *time.Time
	err := conn.QueryRowContext(ctx, `
		SELECT l.pid, COALESCE(a.application_name, ''), COALESCE(host(a.client_addr), 'local'), a.backend_start
		  FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		 WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		   AND ((l.classid::bigint << 32) | l.objid::bigint) = $1
		 LIMIT 1`, int64(migrationLockID)).Scan(&pid, &app, &addr, &since)
	if err != nil {
		return "another process holds the migration lock"
	}
	s := fmt.Sprintf("%q (pid %d from %s", app, pid, addr)
	if since != nil {
		s += fmt.Sprintf(", connected %s ago", time.Since(*since).Round(time.Second))
	}
	return s + ") holds the migration lock"
}

// ErrSchemaTooNew is returned when the database was migrated by a newer
// Countersign than this one.
var ErrSchemaTooNew = errors.New("db: the database schema is newer than this binary knows; upgrade Countersign")

func checkSchemaKnown(ctx context.Context, p *goose.Provider) error {
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("db: read schema version: %w", err)
	}
	if current > KnownSchemaVersion() {
		return fmt.Errorf("%w (database at %d, binary knows up to %d)", ErrSchemaTooNew, current, KnownSchemaVersion())
	}
	return nil
}

// KnownSchemaVersion is the newest migration embedded in this binary.
func KnownSchemaVersion() int64 {
	var max int64
	entries, _ := migrations.FS.ReadDir(".")
	for _, e := range entries {
		var v int64
		if _, err := fmt.Sscanf(e.Name(), "%d_", &v); err == nil && v > max {
			max = v
		}
	}
	return max
}

// PendingMigration is a migration the database lacks, as `countersign
// migrate --check` lists it.
type PendingMigration struct {
	Version int64
	Name    string
	// Reversible: the migration has a Down section that undoes it safely
	// and does not declare itself irreversible.
	Reversible bool
	// Why is the reason it is not reversible.
	Why string
}

// PendingMigrations lists the migrations the database at url lacks, in
// order, each with whether it can be undone, and the database's current
// version. It changes nothing.
func PendingMigrations(ctx context.Context, url string) (current int64, pending []PendingMigration, err error) {
	sqlDB, err := openMigrationDB(url, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return 0, nil, err
	}
	defer sqlDB.Close()
	p, err := newProvider(sqlDB)
	if err != nil {
		return 0, nil, err
	}
	// Status would create goose's version table on a new database; a check
	// changes nothing, so an empty database is read as version 0.
	var table *string
	if err := sqlDB.QueryRowContext(ctx, `SELECT to_regclass('goose_db_version')::text`).Scan(&table); err != nil {
		return 0, nil, fmt.Errorf("db: read schema version: %w", err)
	}
	applied := map[int64]bool{}
	if table != nil {
		rows, err := sqlDB.QueryContext(ctx, `SELECT version_id FROM goose_db_version WHERE is_applied`)
		if err != nil {
			return 0, nil, fmt.Errorf("db: read schema version: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var v int64
			if err := rows.Scan(&v); err != nil {
				return 0, nil, fmt.Errorf("db: read schema version: %w", err)
			}
			applied[v] = true
			current = max(current, v)
		}
		if err := rows.Err(); err != nil {
			return 0, nil, fmt.Errorf("db: read schema version: %w", err)
		}
	}
	if current > KnownSchemaVersion() {
		return 0, nil, fmt.Errorf("%w (database at %d, binary knows up to %d)", ErrSchemaTooNew, current, KnownSchemaVersion())
	}
	for _, s := range p.ListSources() {
		if applied[s.Version] {
			continue
		}
		name := migrationName(s)
		ok, why, err := Reversibility(name)
		if err != nil {
			return 0, nil, err
		}
		pending = append(pending, PendingMigration{Version: s.Version, Name: name, Reversible: ok, Why: why})
	}
	return current, pending, nil
}

// IrreversibleMarker is how a migration declares that undoing it is not
// safe, with the reason on the same line:
//
//	-- Irreversible: a two-person rule would silently become the owner's alone
//
// A migration is reversible when it has a Down section with statements and
// carries no such line. A Down that would let the previous release decide
// with less than this one required (drop a rule, widen a grant) is not
// safe: the migration says so instead.
const IrreversibleMarker = "-- Irreversible:"

// Reversibility reads whether the embedded migration name can be undone,
// and if not, why.
func Reversibility(name string) (bool, string, error) {
	f, err := migrations.FS.Open(name)
	if err != nil {
		return false, "", fmt.Errorf("db: read migration %s: %w", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	inDown, downStatements := false, false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, IrreversibleMarker); ok {
			return false, strings.TrimSpace(rest), nil
		}
		switch {
		case strings.HasPrefix(line, "-- +goose Down"):
			inDown = true
		case strings.HasPrefix(line, "-- +goose Up"):
			inDown = false
		case inDown && line != "" && !strings.HasPrefix(line, "--"):
			downStatements = true
		}
	}
	if err := sc.Err(); err != nil {
		return false, "", fmt.Errorf("db: read migration %s: %w", name, err)
	}
	if !downStatements {
		return false, "it has no Down section", nil
	}
	return true, "", nil
}

// ErrIrreversible is returned when undoing migrations would undo one that
// declares itself irreversible (or has no Down section).
var ErrIrreversible = errors.New("db: a migration to undo is not reversible")

// MigrateDown undoes the applied migrations above version, newest first,
// under the migration lock, each logged as Migrate logs. It refuses,
// changing nothing, when one of them is not reversible: then the way back
// is the backup taken before the upgrade.
func MigrateDown(ctx context.Context, url string, version int64, opt MigrateOptions) (undone int, err error) {
	p, log, release, err := openLocked(ctx, url, opt)
	if err != nil {
		return 0, err
	}
	defer release()
	st, err := p.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("db: read migration status: %w", err)
	}
	var todo []*goose.Source
	for i := len(st) - 1; i >= 0; i-- {
		s := st[i]
		if s.State != goose.StateApplied || s.Source.Version <= version {
			continue
		}
		name := migrationName(s.Source)
		if ok, why, err := Reversibility(name); err != nil {
			return 0, err
		} else if !ok {
			return 0, fmt.Errorf("%w: %s (%s); restore the backup taken before the upgrade instead", ErrIrreversible, name, why)
		}
		todo = append(todo, s.Source)
	}
	for _, s := range todo {
		name := migrationName(s)
		log.Info("undoing migration", "migration", name)
		start := time.Now()
		if _, err := p.ApplyVersion(ctx, s.Version, false); err != nil {
			return undone, fmt.Errorf("db: undo migration %s: %w", name, err)
		}
		undone++
		log.Info("migration undone", "migration", name, "took", time.Since(start).Round(time.Millisecond).String())
	}
	return undone, nil
}
