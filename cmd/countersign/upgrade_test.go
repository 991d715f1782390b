package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/db"
	"github.com/jackc/pgx/v5"
)

// previousRelease is the schema version of the previous release (105f1b5).
const previousRelease = 20

func schemaVersion(t *testing.T, u string) int64 {
	t.Helper()
	c, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var v int64
	if err := c.QueryRow(context.Background(), `SELECT COALESCE(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMigrateCheck: --check on a database of the previous release lists
// every migration the upgrade would run, says which cannot be undone and
// gives the backup command, and applies nothing; on an empty database it
// creates nothing; on a current one there is nothing to apply.
func TestMigrateCheck(t *testing.T) {
	t.Run("PreviousRelease", func(t *testing.T) {
		_, u := emptyDatabase(t)
		if _, err := db.MigrateWith(context.Background(), u, db.MigrateOptions{UpTo: previousRelease}); err != nil {
			t.Fatal(err)
		}
		code, out, errb := runCmd(t, map[string]string{"COUNTERSIGN_DATABASE_URL": u}, "migrate", "--check")
		if code != 0 {
			t.Fatalf("exit %d: %s %s", code, out, errb)
		}
		for _, want := range []string{"schema version 20", "00021_tool_shell_argument.sql            reversible",
			"00026_teams_deciders.sql                 NOT reversible: undone, a two-person rule",
			"00028_passkeys.sql                       NOT reversible", "00029_audit_owner.sql                    reversible",
			"pg_dump --format=custom"} {
			if !strings.Contains(out, want) {
				t.Errorf("--check does not say %q:\n%s", want, out)
			}
		}
		if v := schemaVersion(t, u); v != previousRelease {
			t.Fatalf("--check migrated the database to %d", v)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		_, u := emptyDatabase(t)
		code, out, errb := runCmd(t, map[string]string{"COUNTERSIGN_DATABASE_URL": u}, "migrate", "--check")
		if code != 0 || !strings.Contains(out, "schema version 0") || !strings.Contains(out, "00001_foundation.sql") {
			t.Fatalf("exit %d: %s %s", code, out, errb)
		}
		if n := tableCount(t, u); n != 0 {
			t.Fatalf("--check created %d tables", n)
		}
	})
	t.Run("Current", func(t *testing.T) {
		_, u := emptyDatabase(t)
		if _, err := db.Migrate(context.Background(), u); err != nil {
			t.Fatal(err)
		}
		code, out, _ := runCmd(t, map[string]string{"COUNTERSIGN_DATABASE_URL": u}, "migrate", "--check")
		if code != 0 || !strings.Contains(out, "Nothing to apply.") {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
}

// TestMigrateDownTo: undoing is refused, changing nothing, when a
// migration to undo is not reversible; reversible ones are undone and
// applied again.
func TestMigrateDownTo(t *testing.T) {
	_, u := emptyDatabase(t)
	env := map[string]string{"COUNTERSIGN_DATABASE_URL": u}
	if code, out, errb := runCmd(t, env, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s %s", code, out, errb)
	}
	known := db.KnownSchemaVersion()
	code, out, errb := runCmd(t, env, "migrate", "--down-to", "20")
	if code != 1 || !strings.Contains(errb, "00028_passkeys.sql") || !strings.Contains(errb, "restore the backup") {
		t.Fatalf("down past an irreversible migration: exit %d %s %s", code, out, errb)
	}
	if v := schemaVersion(t, u); v != known {
		t.Fatalf("a refused undo changed the schema to %d", v)
	}
	// Every migration after the last irreversible one can be undone.
	_, empty := emptyDatabase(t)
	_, all, err := db.PendingMigrations(context.Background(), empty)
	if err != nil {
		t.Fatal(err)
	}
	last := int64(0)
	for _, m := range all {
		if !m.Reversible {
			last = m.Version
		}
	}
	code, out, errb = runCmd(t, env, "migrate", "--down-to", strconv.FormatInt(last, 10))
	if code != 0 {
		t.Fatalf("down to %d: exit %d %s %s", last, code, out, errb)
	}
	if v := schemaVersion(t, u); v != last {
		t.Fatalf("after --down-to %d the schema is at %d", last, v)
	}
	if code, out, errb := runCmd(t, env, "migrate"); code != 0 || schemaVersion(t, u) != known {
		t.Fatalf("migrate again: %d %s %s", code, out, errb)
	}
}
