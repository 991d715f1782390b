package db_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/migrations"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// emptyDatabase creates a database with no schema at all.
func emptyDatabase(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := "cs_empty_" + t.Name()
	_, _ = conn.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, _ := pgx.Connect(context.Background(), testenv.AdminURL())
		if c != nil {
			_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
			c.Close(context.Background())
		}
	})
	return withDB(testenv.AdminURL(), name)
}

func TestMigrateConcurrentlyOnce(t *testing.T) {
	u := emptyDatabase(t)
	var wg sync.WaitGroup
	applied := make([]int, 4)
	errs := make([]error, 4)
	for i := range applied {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			applied[i], errs[i] = db.Migrate(context.Background(), u)
		}(i)
	}
	wg.Wait()
	total := 0
	for i := range applied {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		total += applied[i]
	}
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if total != len(files) {
		t.Fatalf("migrations applied %d times in all, want each once (%d)", total, len(files))
	}
	if n, err := db.Migrate(context.Background(), u); err != nil || n != 0 {
		t.Fatalf("re-run applied %d (%v)", n, err)
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	u := testenv.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, db.KnownSchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx, u); !errors.Is(err, db.ErrSchemaTooNew) {
		t.Fatalf("want ErrSchemaTooNew, got %v", err)
	}
}

func TestAuditIsAppendOnly(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	err := store.InTx(ctx, func(tx pgx.Tx) error {
		return db.RecordAudit(ctx, tx, approval.AuditEvent{Actor: approval.SystemActor, Action: "test"})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{`UPDATE audit_events SET action = 'x'`, `DELETE FROM audit_events`, `TRUNCATE audit_events CASCADE`} {
		if _, err := store.Pool.Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only trigger's refusal", sql, err)
		}
	}
	// A failed transaction leaves no line behind, though its line was written.
	var recorded error
	err = store.InTx(ctx, func(tx pgx.Tx) error {
		recorded = db.RecordAudit(ctx, tx, approval.AuditEvent{Actor: approval.SystemActor, Action: "rolled back"})
		return errors.New("boom")
	})
	if recorded != nil || err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("record %v, transaction %v", recorded, err)
	}
	page, err := store.ListAudit(ctx, db.AuditFilter{})
	if err != nil || len(page.Lines) != 1 || page.Lines[0].Action != "test" {
		t.Fatalf("%v %+v", err, page)
	}
}

func TestAPIKeys(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	key, k, err := store.CreateAPIKey(ctx, "runtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.AuthenticateAPIKey(ctx, key)
	if err != nil || got.ID != k.ID {
		t.Fatal(err)
	}
	for _, bad := range []string{"", key + "x", "cs_" + key[3:len(key)-1], "Bearer " + key} {
		if _, err := store.AuthenticateAPIKey(ctx, bad); approval.KindOf(err) != approval.KindUnauthorized {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
