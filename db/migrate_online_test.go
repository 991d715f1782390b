package db_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// previousRelease is the schema version of the previous release (105f1b5):
// the migrations after it are the ones an upgrade applies.
const previousRelease = 20

// probeBound is how long a write of a serving instance may wait while
// migrations run: a check's runtime fails closed long before a minute,
// and a waiting load balancer takes the instance out.
const probeBound = time.Second

// TestMigrationsOnline is the rule that migrations run online: on a
// database at the previous release's schema holding many audit lines and
// items, every pending migration is applied while a probe writes what a
// serving instance writes (an item and its audit line, every 100 ms) and a
// sealer seals. It fails when a probe write waited more than a second
// (naming the migrations that ran meanwhile) or when the migrations left
// dead rows behind in any table.
//
// In the normal test run it holds 200,000 audit lines and 40,000 items;
// COUNTERSIGN_MIGRATION_LOAD=full makes it 1,000,000 and 200,000 and
// prints the figures.
func TestMigrationsOnline(t *testing.T) {
	events, items := 200_000, 40_000
	if os.Getenv("COUNTERSIGN_MIGRATION_LOAD") == "full" {
		events, items = 1_000_000, 200_000
	}
	u := uniqueDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if _, err := db.MigrateWith(ctx, u, db.MigrateOptions{UpTo: previousRelease}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	start := time.Now()
	fillPreviousRelease(t, conn, events, items)
	sizeBefore := tableSize(t, conn, "audit_events")
	t.Logf("filled %d audit lines and %d items in %s; audit_events %d MB", events, items, time.Since(start).Round(time.Millisecond), sizeBefore>>20)

	logs := &migrationLog{}
	probes := startProbes(t, u)
	time.Sleep(300 * time.Millisecond) // the probes write before the migrations start, too
	start = time.Now()
	n, err := db.MigrateWith(ctx, u, db.MigrateOptions{Log: slog.New(logs), Heartbeat: time.Hour})
	took := time.Since(start)
	time.Sleep(300 * time.Millisecond)
	writes := probes.stop()
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Logf("applied %d migrations in %s", n, took.Round(time.Millisecond))
	for _, m := range logs.ran() {
		t.Logf("  %-40s %s", m.name, m.end.Sub(m.start).Round(time.Millisecond))
	}

	var worst time.Duration
	for _, w := range writes {
		worst = max(worst, w.took)
		if w.err != nil {
			t.Errorf("a probe write failed at +%s: %v", w.at.Sub(start).Round(time.Millisecond), w.err)
		}
		if w.took > probeBound {
			t.Errorf("a probe write (%s) waited %s at +%s, more than %s, while %s ran", w.what, w.took.Round(time.Millisecond),
				w.at.Sub(start).Round(time.Millisecond), probeBound, logs.during(w.at, w.at.Add(w.took)))
		}
	}
	t.Logf("%d probe writes, the slowest %s", len(writes), worst.Round(time.Millisecond))
	if len(writes) < int(took/(200*time.Millisecond)) {
		t.Errorf("only %d probe writes in %s: the probe was held up", len(writes), took)
	}

	// No dead rows left behind, in any table.
	rows, err := conn.Query(ctx, `SELECT relname, n_live_tup, n_dead_tup FROM pg_stat_user_tables ORDER BY relname`)
	if err != nil {
		t.Fatal(err)
	}
	type stat struct {
		Name       string
		Live, Dead int64
	}
	stats, err := pgx.CollectRows(rows, pgx.RowToStructByPos[stat])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats {
		dead := s.Dead
		if s.Name == "audit_events" {
			dead = exactDead(t, conn, s.Name, dead)
			t.Logf("audit_events after: %d live, %d dead rows, %d MB (%d MB before)", s.Live, dead, tableSize(t, conn, s.Name)>>20, sizeBefore>>20)
		}
		if dead > 10_000 && dead > s.Live/50 {
			t.Errorf("%s holds %d dead rows (%d live) after the migrations: a backfill updated it without VACUUM", s.Name, dead, s.Live)
		}
	}
}

// fillPreviousRelease writes, at the previous release's schema, items in
// every state (one in a hundred pending) and audit lines like a busy
// installation's: the lines of each item, calls allowed by standing
// grants, refusals by policy in the items' conversations, sign-ins. The
// lines are stored sealed (seq set) as the sealer leaves them; their
// hashes are placeholders (this test does not verify the chain).
func fillPreviousRelease(t *testing.T, conn *pgx.Conn, events, items int) {
	t.Helper()
	grants := max(items/100, 10)
	rest := events - 2*items
	// The bulk goes in without the big tables' plain indexes, which are
	// built again afterwards (faster than one entry at a time).
	ctx := context.Background()
	rows, err := conn.Query(ctx, `SELECT i.indexname, i.indexdef FROM pg_indexes i
		WHERE i.schemaname = 'public' AND i.tablename IN ('audit_events', 'approvals')
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`)
	if err != nil {
		t.Fatal(err)
	}
	indexes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Name, Def string }])
	if err != nil {
		t.Fatal(err)
	}
	for _, ix := range indexes {
		if _, err := conn.Exec(ctx, `DROP INDEX `+pgx.Identifier{ix.Name}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	sqls := []string{
		`INSERT INTO users (issuer, subject, email, name) SELECT 'https://idp.example', 'user-' || i, 'u' || i || '@example.com', 'User ' || i FROM generate_series(0, 49) i`,
		`INSERT INTO api_keys (name, key_hash, key_prefix) VALUES ('runtime', '\x01', 'cs_0001')`,
		`INSERT INTO connectors (name, display_name, kind) VALUES ('files', 'Files', 'connector')`,
		`INSERT INTO tools (connector, name, display_name, mode, standing_approval) SELECT 'files', 'tool' || i, 'Tool ' || i, 'require_approval', true FROM generate_series(0, 9) i`,
		fmt.Sprintf(`INSERT INTO approvals (owner_subject, api_key_id, conversation_id, turn_id, call_id, tool_id, connector, tool,
			arguments_digest, arguments_size, preview, available_decisions, policy_version, status, created_at, expires_at, decided_at)
			SELECT 'user-' || i %% 50, 1, 'conv-' || i / 4, 'turn-' || i, 'call-' || i, (SELECT min(id) FROM tools) + i %% 10, 'files', 'tool' || i %% 10,
				md5(i::text), 10, '{}', '{approve,reject}', 1,
				CASE WHEN i %% 100 = 0 THEN 'pending' ELSE (ARRAY['consumed', 'rejected', 'expired', 'approved'])[1 + i %% 4] END,
				now() - interval '1 day', now() + interval '1 hour', CASE WHEN i %% 100 = 0 THEN NULL ELSE now() - interval '1 day' END
			FROM generate_series(1, %d) i`, items),
		fmt.Sprintf(`INSERT INTO standing_grants (user_subject, tool_id, policy_version) SELECT 'user-' || i %% 50, (SELECT min(id) FROM tools) + i %% 10, 1 FROM generate_series(1, %d) i`, grants),
		`SET session_replication_role = replica`, // the lines go in sealed, past the insert trigger
		`CREATE TEMP SEQUENCE fill_seq`,
		`INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool, conversation_id, turn_id, approval_id, seq, prev_hash, hash)
			SELECT 'api_key', '1', 'runtime', x.action, a.connector, a.tool, a.conversation_id, a.turn_id, a.id::text,
				nextval('fill_seq'), repeat('0', 64), md5(a.id::text || x.action) || md5(x.action)
			FROM approvals a CROSS JOIN (VALUES ('approval requested'), ('approved')) AS x(action)`,
		fmt.Sprintf(`INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool, conversation_id, detail, seq, prev_hash, hash)
			SELECT 'api_key', '1', 'runtime',
				CASE WHEN i %% 3 = 0 THEN 'blocked by policy' ELSE 'auto-approved by Always allow' END, 'files', 'tool' || i %% 10,
				CASE WHEN i %% 3 = 0 THEN 'conv-' || i %% %d ELSE 'conv-g' || i END,
				CASE WHEN i %% 3 = 0 THEN '{}'::jsonb ELSE jsonb_build_object('grant_id', 1 + i %% %d) END,
				nextval('fill_seq'), repeat('0', 64), md5(i::text) || md5(i::text)
			FROM generate_series(1, %d) i`, items/4, grants, rest*7/10),
		fmt.Sprintf(`INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, seq, prev_hash, hash)
			SELECT 'user', 'user-' || i %% 50, 'User', 'sign-in', nextval('fill_seq'), repeat('0', 64), md5(i::text) || md5('s')
			FROM generate_series(1, %d) i`, rest-rest*7/10),
		`SET session_replication_role = DEFAULT`,
	}
	for _, ix := range indexes {
		sqls = append(sqls, ix.Def)
	}
	sqls = append(sqls, `VACUUM (ANALYZE) audit_events`, `VACUUM (ANALYZE) approvals`, `VACUUM (ANALYZE) standing_grants`)
	for _, sql := range sqls {
		if _, err := conn.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
}

// uniqueDatabase creates an empty database of its own for a long test.
func uniqueDatabase(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("cs_online_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), testenv.AdminURL())
		if err == nil {
			_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			_ = c.Close(context.Background())
		}
	})
	return withDB(testenv.AdminURL(), name)
}

func tableSize(t *testing.T, conn *pgx.Conn, table string) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), `SELECT pg_table_size($1::regclass)`, table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// exactDead counts table's dead rows with pgstattuple when the server has
// it, since the statistics of a migration's last transaction may not be
// reported yet; else it keeps the statistics' count.
func exactDead(t *testing.T, conn *pgx.Conn, table string, fallback int64) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pgstattuple`); err != nil {
		t.Logf("no pgstattuple (%v): dead rows from the statistics", err)
		return fallback
	}
	var n int64
	if err := conn.QueryRow(ctx, `SELECT dead_tuple_count FROM pgstattuple($1::regclass)`, table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// probeWrite is one write of the probe.
type probeWrite struct {
	what string
	at   time.Time
	took time.Duration
	err  error
}

type probes struct {
	mu     sync.Mutex
	writes []probeWrite
	done   chan struct{}
	wg     sync.WaitGroup
}

// startProbes writes, every 100 ms on connections of their own, what a
// serving instance of the previous release writes: an item with its audit
// line in one transaction (a check that asks a person) and an audit line
// alone (a refusal); and seals the log as its sealer does.
func startProbes(t *testing.T, u string) *probes {
	t.Helper()
	p := &probes{done: make(chan struct{})}
	ctx := context.Background()
	writes := map[string][]string{
		"an audit line": {`INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool)
			VALUES ('api_key', '1', 'runtime', 'blocked by policy', 'files', 'tool1')`},
		// As a check does: the tool's policy held (FOR SHARE), then the
		// item, then its line.
		"an item and its audit line": {`WITH t AS (SELECT id FROM tools WHERE name = 'tool0' FOR SHARE),
			a AS (INSERT INTO approvals (owner_subject, api_key_id, conversation_id, turn_id, call_id, tool_id, connector, tool,
				arguments_digest, arguments_size, preview, available_decisions, policy_version, expires_at)
			SELECT 'user-1', 1, 'probe', gen_random_uuid()::text, 'call', t.id, 'files', 'tool0', 'd', 1, '{}', '{approve,reject}', 1, now() + interval '1 hour'
			FROM t RETURNING id)
			INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool, approval_id)
			SELECT 'api_key', '1', 'runtime', 'approval requested', 'files', 'tool0', id::text FROM a`},
		"a seal": {`SELECT audit_seal(500)`},
	}
	for what, sqls := range writes {
		c, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer c.Close(ctx)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-p.done:
					return
				case <-tick.C:
				}
				at := time.Now()
				var err error
				for _, sql := range sqls {
					if _, err = c.Exec(ctx, sql); err != nil {
						break
					}
				}
				if what == "a seal" && err == nil {
					continue // sealing is the instances' work, not a wait anyone sees
				}
				p.mu.Lock()
				p.writes = append(p.writes, probeWrite{what: what, at: at, took: time.Since(at), err: err})
				p.mu.Unlock()
			}
		}()
	}
	return p
}

func (p *probes) stop() []probeWrite {
	close(p.done)
	p.wg.Wait()
	return p.writes
}

// migrationLog is a slog handler that keeps when each migration started
// and ended, from Migrate's own log lines.
type migrationLog struct {
	mu      sync.Mutex
	entries []ranMigration
}

type ranMigration struct {
	name       string
	start, end time.Time
}

func (l *migrationLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *migrationLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *migrationLog) WithGroup(string) slog.Handler            { return l }
func (l *migrationLog) Handle(_ context.Context, r slog.Record) error {
	var name string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "migration" {
			name = a.Value.String()
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	switch r.Message {
	case "applying migration":
		l.entries = append(l.entries, ranMigration{name: name, start: r.Time})
	case "migration applied", "migration failed":
		for i := range l.entries {
			if l.entries[i].name == name && l.entries[i].end.IsZero() {
				l.entries[i].end = r.Time
			}
		}
	}
	return nil
}

func (l *migrationLog) ran() []ranMigration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ranMigration(nil), l.entries...)
}

// during names the migrations that ran at some time in [from, to].
func (l *migrationLog) during(from, to time.Time) string {
	var names []string
	for _, m := range l.ran() {
		end := m.end
		if end.IsZero() {
			end = to
		}
		if !m.start.After(to) && !end.Before(from) {
			names = append(names, m.name)
		}
	}
	if len(names) == 0 {
		return "no migration"
	}
	return strings.Join(names, ", ")
}
