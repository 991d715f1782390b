package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/web"
)

// migrateUsage is the migrate command's usage line.
const migrateUsage = "countersign migrate [--check | --down-to VERSION]   (reads COUNTERSIGN_DATABASE_URL)"

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate", migrateUsage, stderr, false)
	check := fs.Bool("check", false, "say which migrations would run and whether each can be undone; change nothing")
	downTo := fs.Int64("down-to", -1, "undo the migrations above this schema version (refused when one of them cannot be undone)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := web.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		return errors.New("COUNTERSIGN_DATABASE_URL is required for migrate")
	}
	if *check {
		return migrateCheck(ctx, cfg.DatabaseURL, stdout)
	}
	opt := db.MigrateOptions{Log: newLogger(stderr, cfg.LogLevel), LockTimeout: cfg.MigrationLockTimeout}
	if *downTo >= 0 {
		n, err := db.MigrateDown(ctx, cfg.DatabaseURL, *downTo, opt)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "undid %d migration(s); schema at version %d\n", n, *downTo)
		return nil
	}
	n, err := db.MigrateWith(ctx, cfg.DatabaseURL, opt)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "applied %d migration(s); schema at version %d\n", n, db.KnownSchemaVersion())
	return nil
}

// migrateCheck prints what migrate would apply and whether each migration
// can be undone, and when one cannot, the backup to take first.
func migrateCheck(ctx context.Context, url string, stdout io.Writer) error {
	current, pending, err := db.PendingMigrations(ctx, url)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "The database is at schema version %d; this binary (%s) knows up to %d.\n", current, buildVersion().String(), db.KnownSchemaVersion())
	if len(pending) == 0 {
		fmt.Fprintln(stdout, "Nothing to apply.")
		return nil
	}
	fmt.Fprintf(stdout, "%d migration(s) would run:\n", len(pending))
	irreversible := 0
	for _, m := range pending {
		state := "reversible"
		if !m.Reversible {
			state = "NOT reversible: " + m.Why
			irreversible++
		}
		fmt.Fprintf(stdout, "  %-40s %s\n", m.Name, state)
	}
	if irreversible == 0 {
		fmt.Fprintf(stdout, "All can be undone: \"countersign migrate --down-to %d\" with this binary, then start the previous one.\n", current)
		return nil
	}
	fmt.Fprintf(stdout, "%d cannot be undone. Take a backup before migrating, and restore it to go back (docs/deployment.md, Upgrading):\n", irreversible)
	fmt.Fprintln(stdout, "  pg_dump --format=custom --file=countersign-before-upgrade.dump \"$COUNTERSIGN_DATABASE_URL\"")
	return nil
}

func runAPIKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stderr, "Usage: countersign apikey create --name NAME [--team TEAM]   (reads COUNTERSIGN_DATABASE_URL)")
			return nil
		}
		fmt.Fprintln(stderr, "Usage: countersign apikey create --name NAME")
		return errUsage
	}
	fs := newFlags("apikey create", "countersign apikey create --name NAME [--team TEAM]   (reads COUNTERSIGN_DATABASE_URL)", stderr, false)
	name := fs.String("name", "", "a name that says which runtime uses the key (required)")
	team := fs.String("team", "", "make it a service agent's key for this team: its checks may omit user, and their items go to the team")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *name == "" {
		fs.Usage()
		return errUsage
	}
	store, err := openCommandDB(ctx, "apikey create")
	if err != nil {
		return err
	}
	defer store.Close()
	key, k, err := store.CreateAPIKeyWith(ctx, *name, nil, db.APIKeyOptions{Team: *team})
	if err != nil {
		if e := approval.AsError(err); e != nil {
			return errors.New(e.Message)
		}
		return err
	}
	if *team != "" {
		fmt.Fprintf(stderr, "Created API key %q (id %d) for team %q. It is shown once; store it now:\n", k.Name, k.ID, *team)
	} else {
		fmt.Fprintf(stderr, "Created API key %q (id %d). It is shown once; store it now:\n", k.Name, k.ID)
	}
	fmt.Fprintln(stdout, key)
	return nil
}

// openCommandDB opens the database of COUNTERSIGN_DATABASE_URL for a
// command that needs Countersign's schema to be there already.
func openCommandDB(ctx context.Context, command string) (*db.DB, error) {
	cfg, err := web.LoadConfig(os.Getenv)
	if err != nil {
		return nil, err
	}
	if cfg.DatabaseURL == "" {
		return nil, errors.New("COUNTERSIGN_DATABASE_URL is required for " + command)
	}
	return openMigrated(ctx, cfg.DatabaseURL)
}

// openMigrated opens a database that already holds Countersign's schema.
// Only migrate, serve and dev migrate: any other command pointed at a
// database without the schema (a guessed URL) is refused, and the database
// is left as it was.
func openMigrated(ctx context.Context, url string) (*db.DB, error) {
	if err := db.CheckSchema(ctx, url); err != nil {
		return nil, err
	}
	return db.Open(ctx, url)
}
