package db_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// TestAuditOwnerBackfill: the lines the previous release wrote get their
// owner from the item, the grant or the playbook they name, and a refusal
// from the other lines of its key's conversation when those name one
// person; nothing else of a line changes, and once the migration is done
// the append-only rule is strict again, whatever a session says.
func TestAuditOwnerBackfill(t *testing.T) {
	u := emptyDatabase(t)
	ctx := context.Background()
	if _, err := db.MigrateWith(ctx, u, db.MigrateOptions{UpTo: previousRelease}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		`INSERT INTO api_keys (id, name, key_hash, key_prefix) VALUES (1, 'runtime', '\x01', 'cs_1'), (2, 'other', '\x02', 'cs_2')`,
		`INSERT INTO connectors (name, display_name, kind) VALUES ('files', 'Files', 'connector')`,
		`INSERT INTO tools (id, connector, name, display_name, mode, standing_approval) VALUES (1, 'files', 'write', 'Write', 'require_approval', true)`,
		`INSERT INTO approvals (id, owner_subject, api_key_id, conversation_id, turn_id, call_id, tool_id, connector, tool,
			arguments_digest, arguments_size, preview, available_decisions, policy_version, expires_at) VALUES
			('00000000-0000-0000-0000-00000000000a', 'alice', 1, 'c-alice', 't', 'k1', 1, 'files', 'write', 'd', 1, '{}', '{approve}', 1, now() + interval '1 hour'),
			('00000000-0000-0000-0000-00000000000b', 'bob', 1, 'c-shared', 't', 'k2', 1, 'files', 'write', 'd', 1, '{}', '{approve}', 1, now() + interval '1 hour'),
			('00000000-0000-0000-0000-00000000000c', 'carol', 1, 'c-shared', 't', 'k3', 1, 'files', 'write', 'd', 1, '{}', '{approve}', 1, now() + interval '1 hour')`,
		`INSERT INTO standing_grants (id, user_subject, tool_id, policy_version) VALUES (7, 'dave', 1, 1)`,
		`INSERT INTO playbooks (id, owner_subject, name, definition, fingerprint) VALUES ('pb', 'erin', 'Sync', '{}', 'f')`,
		`INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, conversation_id, approval_id, playbook_id, detail) VALUES
			('api_key', '1', 'runtime', 'approval requested', 'c-alice', '00000000-0000-0000-0000-00000000000a', '', '{}'),
			('api_key', '1', 'runtime', 'blocked by policy', 'c-alice', '', '', '{}'),
			('api_key', '2', 'other', 'blocked by policy', 'c-alice', '', '', '{}'),
			('api_key', '1', 'runtime', 'blocked by policy', 'c-shared', '', '', '{}'),
			('api_key', '1', 'runtime', 'approval requested', 'c-shared', '00000000-0000-0000-0000-00000000000b', '', '{}'),
			('api_key', '1', 'runtime', 'approval requested', 'c-shared', '00000000-0000-0000-0000-00000000000c', '', '{}'),
			('api_key', '1', 'runtime', 'blocked after repeated rejections', 'c-alice', '', '', '{}'),
			('api_key', '1', 'runtime', 'blocked by policy', '', '', '', '{}'),
			('api_key', '1', 'runtime', 'auto-approved by Always allow', 'c-g', '', '', '{"grant_id": 7}'),
			('api_key', '1', 'runtime', 'allowed by pre-approval', '', '', 'pb', '{}'),
			('api_key', '1', 'runtime', 'approval requested', 'c-x', 'not-a-uuid', '', '{}'),
			('user', 'alice', 'Alice', 'sign-in', '', '', '', '{}')`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	// Sealed as the previous release's sealer does (this binary's SealAll
	// reads the schema it was built for).
	testenv.SealAsBefore(t, conn)
	// Each event, its place, its hash and its hash recomputed: before the
	// migrations from the event's own columns, after them from the chain's
	// table (migration 00041), which must hold the same chain.
	hashes := func(sql string) string {
		var s string
		if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	const onEvents = `SELECT string_agg(concat_ws(':', id, seq, hash, CASE WHEN seq IS NOT NULL THEN audit_event_hash(prev_hash, audit_events) END), ',' ORDER BY id) FROM audit_events`
	before := hashes(onEvents)
	if _, err := db.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT owner_subject FROM audit_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"alice", // its item
		"alice", // a refusal in alice's conversation of the same key
		"",      // the same conversation id under another key is another conversation
		"",      // a conversation of two people: not knowable
		"bob", "carol",
		"alice", // blocked after repeated rejections, in alice's conversation
		"",      // no conversation
		"dave",  // the grant's person
		"erin",  // the playbook's owner
		"",      // an approval id that is no item
		"",      // not a call
	}
	if strings.Join(owners, ",") != strings.Join(want, ",") {
		t.Fatalf("owners\n got %q\nwant %q", owners, want)
	}
	if after := hashes(onEvents); after != before {
		t.Fatalf("the backfill changed the chain:\n%s\n%s", before, after)
	}
	if chain := hashes(`SELECT string_agg(concat_ws(':', e.id, c.seq, c.hash, audit_chain_hash(c.prev_hash, c.seq, e)), ',' ORDER BY e.id)
		FROM audit_events e JOIN audit_chain c ON c.event_id = e.id`); chain != before {
		t.Fatalf("the chain's table holds another chain than the events did:\n%s\n%s", before, chain)
	}
	// Append-only again, even for a session that says it backfills.
	_, err = conn.Exec(ctx, `BEGIN; SELECT set_config('countersign.audit_owner_backfill', 'on', true);
		UPDATE audit_events SET owner_subject = 'mallory' WHERE owner_subject = ''; COMMIT`)
	if err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("filling an owner after the migration: %v, want the append-only refusal", err)
	}
	_, _ = conn.Exec(ctx, `ROLLBACK`)
	var procs int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_proc WHERE proname = 'countersign_backfill_audit_owner'`).Scan(&procs); err != nil || procs != 0 {
		t.Fatalf("the backfill procedure is left behind: %d %v", procs, err)
	}
}

// TestMigrationLockWait: a process that finds another one migrating says
// so in its log (who holds the lock), gives up after its lock timeout with
// an error that says why, and migrates once the lock is free.
func TestMigrationLockWait(t *testing.T) {
	u := emptyDatabase(t)
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "countersign migrate"
	holder, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock(x'636f756e7465'::bigint)`); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &log}, nil))
	start := time.Now()
	_, err = db.MigrateWith(ctx, u, db.MigrateOptions{Log: logger, LockTimeout: 1500 * time.Millisecond})
	if !errors.Is(err, db.ErrMigrationLockTimeout) || !strings.Contains(err.Error(), "COUNTERSIGN_MIGRATION_LOCK_TIMEOUT") {
		t.Fatalf("migrate while another process holds the lock: %v", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("gave up after %s, not after its timeout", waited)
	}
	if !strings.Contains(log.String(), "waiting for another process's migrations") || !strings.Contains(log.String(), `\"countersign migrate\" (pid`) {
		t.Fatalf("the wait is not logged with its holder:\n%s", log.String())
	}
	// Released while a second process waits: it migrates, and says so.
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_, _ = holder.Exec(ctx, `SELECT pg_advisory_unlock(x'636f756e7465'::bigint)`)
	}()
	log.Reset()
	n, err := db.MigrateWith(ctx, u, db.MigrateOptions{Log: logger, LockTimeout: time.Minute})
	if err != nil || n == 0 {
		t.Fatalf("after the lock was released: %d %v", n, err)
	}
	for _, want := range []string{"migration lock taken", "applying migration", "migration=00001_foundation.sql", "migration applied", "took="} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
