package db_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// A transaction that writes an audit line does not wait for another one
// still open, and the sealer chains both in transaction-id order, not
// commit order, only once neither can change any more.
func TestAuditSealNoWaitAndOrder(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	first, err := store.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	if err := db.RecordAudit(ctx, first, approval.AuditEvent{Actor: approval.SystemActor, Action: "first"}); err != nil {
		t.Fatal(err)
	}
	// The second transaction starts later, so its id is higher, and
	// commits first. Before the sealer it waited for the first's commit;
	// a lock timeout turns that wait into a failure.
	err = store.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
			return err
		}
		return db.RecordAudit(ctx, tx, approval.AuditEvent{Actor: approval.SystemActor, Action: "second"})
	})
	if err != nil {
		t.Fatalf("an audited transaction waited for another one: %v", err)
	}
	if n, err := store.SealAudit(ctx, 100); err != nil || n != 0 {
		t.Fatalf("sealed %d events (%v) while an older transaction was open; want 0", n, err)
	}
	if r, err := store.VerifyAudit(ctx); err != nil || !r.Intact || r.Events != 0 || r.Unsealed != 1 {
		t.Fatalf("report before the seal: %+v %v", r, err)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	page, err := store.ListAudit(ctx, db.AuditFilter{})
	if err != nil || len(page.Lines) != 2 {
		t.Fatalf("%+v %v", page, err)
	}
	seq := map[string]int64{}
	for _, l := range page.Lines {
		if !l.Sealed() || l.Hash == "" {
			t.Fatalf("not sealed: %+v", l)
		}
		seq[l.Action] = l.Seq
	}
	if seq["first"] != 1 || seq["second"] != 2 {
		t.Fatalf("sealed order %v, want first=1 second=2 (transaction order)", seq)
	}
	if r, err := store.VerifyAudit(ctx); err != nil || !r.Intact || r.Events != 2 || r.Unsealed != 0 {
		t.Fatalf("report after the seal: %+v %v", r, err)
	}
}

// An event accepts no change, before or after its seal, and a seal none:
// its content cannot change, nor its own (no longer written) seal columns,
// and its seal in audit_chain cannot be rewritten or removed.
func TestAuditSealOnlyChange(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	record(t, store, 2, func(int) approval.AuditEvent {
		return approval.AuditEvent{Actor: approval.SystemActor, Action: "approved"}
	})
	if _, err := store.Pool.Exec(ctx, `UPDATE audit_events SET action = 'rejected' WHERE seq IS NULL`); err == nil {
		t.Fatal("an unsealed event was edited")
	}
	if _, err := store.Pool.Exec(ctx, `UPDATE audit_events SET seq = 1, prev_hash = 'x', hash = 'y', action = 'rejected'
		WHERE id = (SELECT min(id) FROM audit_events)`); err == nil {
		t.Fatal("an event was edited while being sealed")
	}
	if _, err := store.Pool.Exec(ctx, `UPDATE audit_events SET seq = 1, prev_hash = 'x', hash = 'y'
		WHERE id = (SELECT min(id) FROM audit_events)`); err == nil {
		t.Fatal("an event was marked sealed on its row")
	}
	if err := store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := store.VerifyAudit(ctx); err != nil || !r.Intact || r.Events != 2 || r.Unsealed != 0 {
		t.Fatalf("after the seal: %+v %v", r, err)
	}
	for _, sql := range []string{
		`UPDATE audit_events SET seq = 99, prev_hash = 'x', hash = 'y' WHERE ` + testenv.AuditEventAt(2),
		`DELETE FROM audit_events WHERE ` + testenv.AuditEventAt(2),
		`UPDATE audit_chain SET hash = 'y' WHERE seq = 2`,
		`UPDATE audit_chain SET event_id = event_id + 1000 WHERE seq = 2`,
		`DELETE FROM audit_chain WHERE seq = 2`,
		`TRUNCATE audit_chain`,
	} {
		if _, err := store.Pool.Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Fatalf("%s: %v, want the append-only refusal", sql, err)
		}
	}
}

// A sealer's connection lives long, and its first seals ran on a nearly
// empty table. A seal on the grown table still looks its events up by id:
// it does not scan the whole table, as a plan kept from those first seals
// would.
func TestAuditSealPlannedForTheTableItSeals(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	conn, err := store.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// insert adds n lines and waits until no transaction older than its
	// own is open anywhere on the server, so that a seal takes them all.
	insert := func(n int) {
		t.Helper()
		var xid string
		if err := conn.QueryRow(ctx, `WITH i AS (INSERT INTO audit_events (actor_kind, action)
			SELECT 'system', 'bulk-' || g FROM generate_series(1, $1) g)
			SELECT pg_current_xact_id()::text`, n).Scan(&xid); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			var past bool
			if err := conn.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::xid8`, xid).Scan(&past); err != nil {
				t.Fatal(err)
			}
			if past {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("a transaction older than %s stayed open for 30 s", xid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	seal := func() int64 {
		t.Helper()
		var n int64
		if err := conn.QueryRow(ctx, `SELECT audit_seal(10000)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Plans kept for a session are chosen after five runs.
	for range 8 {
		insert(3)
		if n := seal(); n != 3 {
			t.Fatalf("sealed %d of 3", n)
		}
	}
	insert(20000)
	for range 2 {
		if n := seal(); n != 10000 {
			t.Fatalf("sealed %d of 10000", n)
		}
	}
	insert(20)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// The count also holds scans of earlier transactions on this
	// connection not yet reported: the seal's own are the difference.
	scans := func() int64 {
		t.Helper()
		var n int64
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_numscans('audit_events'::regclass)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := scans()
	var n int64
	if err := tx.QueryRow(ctx, `SELECT audit_seal(10000)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if scanned := scans() - before; n != 20 || scanned != 0 {
		t.Fatalf("sealed %d of 20 with %d scans of the whole table; want none", n, scanned)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := store.VerifyAudit(ctx); err != nil || !r.Intact || r.Events != 8*3+20000+20 {
		t.Fatalf("after the seals: %+v %v", r, err)
	}
}

// The sealer goes by its queue, never by a transaction id it last saw:
// after a restore into another cluster, transaction ids start again below
// those the chain and the restored lines carry. Both the lines written
// before the dump (still waiting, with ids "from the future") and the new
// ones are sealed, and verify says so.
func TestSealAfterRestore(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	record(t, store, 3, func(int) approval.AuditEvent {
		return approval.AuditEvent{Actor: approval.SystemActor, Action: "before"}
	})
	if err := store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	// As a restore leaves them: the chain's last line and one line still
	// waiting carry transaction ids this cluster has not given out.
	testenv.AsAuditAdmin(t, store,
		`UPDATE audit_chain SET event_xid = '900000000000' WHERE seq = (SELECT max(seq) FROM audit_chain)`,
		`SET session_replication_role = replica`,
		`INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, xid) VALUES ('system', 'system', 'System', 'restored', '900000000001')`,
		`INSERT INTO audit_pending (xid, id) SELECT xid, id FROM audit_events WHERE action = 'restored'`,
		`SET session_replication_role = DEFAULT`)
	record(t, store, 2, func(int) approval.AuditEvent {
		return approval.AuditEvent{Actor: approval.SystemActor, Action: "after"}
	})
	if err := store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := store.VerifyAudit(ctx)
	if err != nil || r.Events != 6 || r.Unsealed != 0 {
		t.Fatalf("after the restore: %+v %v", r, err)
	}
	page, err := store.ListAudit(ctx, db.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range page.Lines {
		if !l.Sealed() {
			t.Errorf("%s line %d not sealed", l.Action, l.ID)
		}
	}
}

// A line taken out of the sealer's queue would never be sealed, and the
// chain's walk would not see it: verify counts it.
func TestVerifyFindsLineOutOfTheQueue(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	record(t, store, 3, func(int) approval.AuditEvent {
		return approval.AuditEvent{Actor: approval.SystemActor, Action: "approved"}
	})
	if r, err := store.VerifyAudit(ctx); err != nil || !r.Intact || r.Unsealed != 3 {
		t.Fatalf("before: %+v %v", r, err)
	}
	if _, err := store.Pool.Exec(ctx, `DELETE FROM audit_pending WHERE id = (SELECT min(id) FROM audit_pending)`); err != nil {
		t.Fatal(err)
	}
	r, err := store.VerifyAudit(ctx)
	if err != nil || r.Intact || !strings.Contains(r.Problem, "neither sealed nor waiting") || !strings.Contains(r.String(), "chain broken: 1 events") {
		t.Fatalf("a line out of the queue: %+v %v\n%s", r, err, r)
	}
}

// The sealer vacuums its queue itself (Sealer.Run), outside any
// transaction, and nothing waiting is lost.
func TestVacuumAuditQueue(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	record(t, store, 5, func(int) approval.AuditEvent {
		return approval.AuditEvent{Actor: approval.SystemActor, Action: "approved"}
	})
	if err := store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	record(t, store, 2, func(int) approval.AuditEvent {
		return approval.AuditEvent{Actor: approval.SystemActor, Action: "waiting"}
	})
	if err := store.VacuumAuditQueue(ctx); err != nil {
		t.Fatal(err)
	}
	var live int64
	if err := store.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_pending`).Scan(&live); err != nil {
		t.Fatal(err)
	}
	if live != 2 {
		t.Fatalf("%d lines waiting after the vacuum, want 2", live)
	}
	if r, err := store.VerifyAudit(ctx); err != nil || !r.Intact || r.Events != 5 || r.Unsealed != 2 {
		t.Fatalf("after the vacuum: %+v %v", r, err)
	}
}

// The running sealer vacuums the queue itself once it has sealed
// PendingVacuumEvery lines (autovacuum's visits are counted apart), and
// not before.
func TestSealerVacuumsQueue(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	add := func(n int) {
		t.Helper()
		if _, err := store.Pool.Exec(ctx, `INSERT INTO audit_events (actor_kind, actor_id, actor_name, action)
			SELECT 'system', 'system', 'system', 'line ' || g FROM generate_series(1, $1) g`, n); err != nil {
			t.Fatal(err)
		}
	}
	vacuums := func() (n int64) {
		t.Helper()
		if err := store.Pool.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'audit_pending'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// An autovacuum of the queue at the moment of the sealer's would make
	// it skip (SKIP_LOCKED): keep autovacuum off the queue here.
	if _, err := store.Pool.Exec(ctx, `ALTER TABLE audit_pending SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		store.RunSealer(runCtx, slog.New(slog.NewTextHandler(io.Discard, nil)), 5*time.Millisecond)
	}()
	defer func() { stop(); <-done }()
	// sealed waits until nothing waits for a seal.
	sealed := func() {
		t.Helper()
		for {
			var waiting bool
			if err := store.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM audit_pending)`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if !waiting {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	add(db.PendingVacuumEvery - 1)
	sealed()
	if n := vacuums(); n != 0 {
		t.Fatalf("vacuumed %d times after %d lines", n, db.PendingVacuumEvery-1)
	}
	add(1)
	sealed()
	// The vacuum follows the seal that reached the count.
	for deadline := time.Now().Add(10 * time.Second); vacuums() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no vacuum of the queue after %d lines sealed", db.PendingVacuumEvery)
		}
	}
}
