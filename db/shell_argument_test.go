package db_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// Migration 21 names `command` as the shell argument of the coding
// agents' Bash tools registered before the hook named it, and of no other
// tool.
func TestMigrationNamesBashShellArgument(t *testing.T) {
	ctx := context.Background()
	url := testenv.NewDatabase(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB := stdlib.OpenDB(*cfg)
	defer sqlDB.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 20); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlDB.ExecContext(ctx, `
		INSERT INTO connectors (name, display_name, kind) VALUES ('claude-code', 'Claude Code', 'builtin'),
			('codex', 'Codex', 'builtin'), ('other', 'Other', 'connector');
		INSERT INTO tools (connector, name, display_name, description, mode, standing_approval) VALUES
			('claude-code', 'Bash', 'Bash', '', 'require_approval', true), ('codex', 'Bash', 'Bash', '', 'require_approval', true),
			('claude-code', 'Read', 'Read', '', 'allow', true), ('other', 'Bash', 'Bash', '', 'require_approval', true)`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 21); err != nil {
		t.Fatal(err)
	}
	rows, err := sqlDB.QueryContext(ctx, `SELECT connector || '/' || name, shell_argument FROM tools`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var tool, arg string
		if err := rows.Scan(&tool, &arg); err != nil {
			t.Fatal(err)
		}
		got[tool] = arg
	}
	want := map[string]string{"claude-code/Bash": "command", "codex/Bash": "command", "claude-code/Read": "", "other/Bash": ""}
	for tool, arg := range want {
		if got[tool] != arg {
			t.Errorf("%s: %q, want %q", tool, got[tool], arg)
		}
	}
}

// A sync sets a tool's shell argument like its texts, and every way of
// reading a tool reads it.
func TestSyncShellArgument(t *testing.T) {
	ctx := context.Background()
	store, _ := testenv.OpenDB(t)
	sync := db.ConnectorSync{Name: "ops", DisplayName: "Ops", Kind: "connector",
		Tools: []db.ToolSync{{Name: "run", DisplayName: "Run", ShellArgument: "cmd"}}}
	if err := store.SyncConnector(ctx, approval.SystemActor, sync); err != nil {
		t.Fatal(err)
	}
	list, err := store.ListPolicies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range list {
		if row.Connector == "ops" && row.ShellArgument != "cmd" {
			t.Fatalf("listed with %q", row.ShellArgument)
		}
	}
	sync.Tools[0].ShellArgument = ""
	if err := store.SyncConnector(ctx, approval.SystemActor, sync); err != nil {
		t.Fatal(err)
	}
	var arg string
	if err := store.Pool.QueryRow(ctx, `SELECT shell_argument FROM tools WHERE connector = 'ops'`).Scan(&arg); err != nil || arg != "" {
		t.Fatalf("after a sync without it: %q %v", arg, err)
	}
}
