package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// TestClaimOnceUnderConcurrentClaims: eight claims of one approved item
// that all arrive while the item's row is held (by a reader's FOR SHARE,
// released only when all eight wait on it) — exactly one is answered, and
// exactly one "claimed" line is audited. Holding the row makes the race
// certain rather than likely: a claim that read the row without locking it
// would see "approved" in all eight, and each would claim.
func TestClaimOnceUnderConcurrentClaims(t *testing.T) {
	const claims = 8
	f := newBlockFixture(t)
	ctx := context.Background()
	a, req := f.pending(t, "turn")
	if _, err := f.store.Decide(ctx, a.ID, f.user, approval.Approve, ""); err != nil {
		t.Fatal(err)
	}
	// The row is held, and the claims are watched, from connections of
	// their own: the pool's eight are the eight claims'.
	side := func() *pgx.Conn {
		conn, err := pgx.Connect(ctx, f.store.Pool.Config().ConnString())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		return conn
	}
	holder, watcher := side(), side()
	hold, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT 1 FROM approvals WHERE id = $1 FOR SHARE`, a.ID); err != nil {
		t.Fatal(err)
	}
	if max := f.store.Pool.Config().MaxConns; max < claims {
		t.Fatalf("the pool holds %d connections, fewer than %d claims", max, claims)
	}

	var wg sync.WaitGroup
	errs := make([]error, claims)
	for i := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.store.Claim(ctx, f.key, a.ID, req.CallID, approval.Digest(req.Arguments))
		}()
	}
	// Every claim waits on the held row before it is let go.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting int
		if err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == claims {
			break
		}
		if time.Now().After(deadline) {
			_ = hold.Rollback(ctx)
			wg.Wait()
			t.Fatalf("only %d of %d claims wait on the held row", waiting, claims)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case approval.AsError(err) == nil || approval.AsError(err).Code != approval.CodeConsumed:
			t.Errorf("a losing claim: %v, want %s", err, approval.CodeConsumed)
		}
	}
	var lines int
	if err := f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = $2`,
		a.ID, approval.ActionClaimed).Scan(&lines); err != nil {
		t.Fatal(err)
	}
	if won != 1 || lines != 1 {
		t.Fatalf("%d claims answered and %d %q lines, want exactly one of each", won, lines, approval.ActionClaimed)
	}
}
