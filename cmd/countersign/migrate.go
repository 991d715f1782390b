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

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate", "countersign migrate   (reads COUNTERSIGN_DATABASE_URL)", stderr, false)
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
	n, err := db.Migrate(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "applied %d migration(s); schema at version %d\n", n, db.KnownSchemaVersion())
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
