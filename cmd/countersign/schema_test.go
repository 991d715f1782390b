package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// emptyDatabase creates a database without Countersign's schema, as a
// guessed URL (the cluster's "postgres") would name, and returns its name
// and URL.
func emptyDatabase(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, testenv.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := fmt.Sprintf("cs_empty_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), testenv.AdminURL())
		if err == nil {
			_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			_ = c.Close(context.Background())
		}
	})
	u, _ := url.Parse(testenv.AdminURL())
	u.Path = "/" + name
	return name, u.String()
}

func tableCount(t *testing.T, dbURL string) int {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCommandsRefuseDatabaseWithoutSchema: apikey create and audit verify
// never migrate; on a database without Countersign's schema they fail,
// name the database, say to run migrate, and leave it untouched.
func TestCommandsRefuseDatabaseWithoutSchema(t *testing.T) {
	for _, args := range [][]string{{"apikey", "create", "--name", "runtime"}, {"audit", "verify"}} {
		t.Run(args[0], func(t *testing.T) {
			name, u := emptyDatabase(t)
			code, out, errb := runCmd(t, map[string]string{"COUNTERSIGN_DATABASE_URL": u}, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, out, errb)
			}
			if strings.Contains(out, "cs_") {
				t.Fatalf("a key was printed for a database without the schema: %q", out)
			}
			for _, want := range []string{`database "` + name + `"`, "countersign migrate"} {
				if !strings.Contains(errb, want) {
					t.Errorf("stderr %q does not say %q", errb, want)
				}
			}
			if n := tableCount(t, u); n != 0 {
				t.Fatalf("the command created %d tables in %s", n, name)
			}
		})
	}
	t.Run("MigrateThenCreate", func(t *testing.T) {
		_, u := emptyDatabase(t)
		env := map[string]string{"COUNTERSIGN_DATABASE_URL": u}
		if code, out, errb := runCmd(t, env, "migrate"); code != 0 {
			t.Fatalf("migrate: exit %d %s %s", code, out, errb)
		}
		code, out, errb := runCmd(t, env, "apikey", "create", "--name", "runtime")
		if code != 0 || !strings.HasPrefix(out, "cs_") {
			t.Fatalf("apikey create after migrate: exit %d %q %q", code, out, errb)
		}
	})
}
