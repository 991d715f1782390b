// Package testenv gives tests real parts: a freshly migrated Postgres
// database per test (cloned from a migrated template), a running server with
// the development identity provider, and browser-like HTTP clients.
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/migrations"
	"github.com/jackc/pgx/v5"
)

var (
	adminURL string
	cluster  *dev.Cluster
	tmplOnce sync.Once
	tmplName string
	tmplErr  error
)

// Main runs a package's tests. Without COUNTERSIGN_TEST_DATABASE_URL it
// starts a private PostgreSQL cluster (the same code `countersign dev`
// uses) for the package and stops it afterwards.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit, for packages with more to clean up.
func Run(m *testing.M) int {
	return run(m, nil)
}

// run starts the database (a private cluster without
// COUNTERSIGN_TEST_DATABASE_URL), then setup, if any, then the tests;
// setup's teardown runs after them and may fail the run.
func run(m *testing.M, setup func() (func() int, error)) int {
	adminURL = os.Getenv("COUNTERSIGN_TEST_DATABASE_URL")
	if adminURL == "" {
		dir, err := dev.TempDir("countersign-test-pg-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "testenv:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		c, err := dev.StartCluster(context.Background(), dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testenv: no COUNTERSIGN_TEST_DATABASE_URL and no private cluster:", err)
			return 1
		}
		cluster = c
		defer func() { _ = c.Stop() }()
		adminURL = c.URL()
	}
	if setup == nil {
		return m.Run()
	}
	teardown, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if teardown() != 0 && code == 0 {
		code = 1
	}
	return code
}

// templateName is derived from the migrations' content, so a changed
// migration gets a fresh template.
func templateName() string {
	h := sha256.New()
	names, _ := fs.Glob(migrations.FS, "*.sql")
	sort.Strings(names)
	for _, n := range names {
		b, _ := migrations.FS.ReadFile(n)
		h.Write([]byte(n))
		h.Write(b)
	}
	return "countersign_tmpl_" + hex.EncodeToString(h.Sum(nil))[:16]
}

func withDB(u, name string) string {
	p, err := url.Parse(u)
	if err != nil {
		panic(err)
	}
	p.Path = "/" + name
	return p.String()
}

// ensureTemplate creates and migrates the template database once, under an
// advisory lock so that packages tested in parallel share it.
func ensureTemplate(ctx context.Context) (string, error) {
	tmplOnce.Do(func() {
		tmplName = templateName()
		conn, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			tmplErr = err
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(7206153)`); err != nil {
			tmplErr = err
			return
		}
		defer conn.Exec(ctx, `SELECT pg_advisory_unlock(7206153)`)
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, tmplName).Scan(&exists); err != nil {
			tmplErr = err
			return
		}
		if exists {
			return
		}
		building := tmplName + "_building"
		_, _ = conn.Exec(ctx, `DROP DATABASE IF EXISTS `+building+` WITH (FORCE)`)
		if _, err := conn.Exec(ctx, `CREATE DATABASE `+building); err != nil {
			tmplErr = err
			return
		}
		if _, err := db.Migrate(ctx, withDB(adminURL, building)); err != nil {
			tmplErr = fmt.Errorf("migrate template: %w", err)
			return
		}
		if _, err := conn.Exec(ctx, `ALTER DATABASE `+building+` RENAME TO `+tmplName); err != nil {
			tmplErr = err
		}
	})
	return tmplName, tmplErr
}

// NewDatabase creates a freshly migrated database for t and returns its
// URL; it is dropped when t ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	if adminURL == "" {
		t.Fatal("testenv: call testenv.Main from the package's TestMain")
	}
	ctx := context.Background()
	tmpl, err := ensureTemplate(ctx)
	if err != nil {
		t.Fatalf("testenv: template database: %v", err)
	}
	name := fmt.Sprintf("cs_test_%d_%s", time.Now().UnixNano(), strings.ToLower(randomHex(4)))
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatalf("testenv: connect: %v", err)
	}
	defer conn.Close(ctx)
	for attempt := 0; ; attempt++ {
		_, err = conn.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE `+tmpl)
		if err == nil || attempt == 20 || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("testenv: create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), adminURL)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
	})
	return withDB(adminURL, name)
}

// OpenDB opens a pool on a fresh database for t.
func OpenDB(t testing.TB) (*db.DB, string) {
	t.Helper()
	u := NewDatabase(t)
	store, err := db.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("testenv: open: %v", err)
	}
	t.Cleanup(store.Close)
	return store, u
}

// AdminURL is the server-level connection string (for tests that create
// databases of their own).
func AdminURL() string { return adminURL }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
