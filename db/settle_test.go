package db_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/jackc/pgx/v5"
)

// An expiry sweep of hundreds of items writes every item's audit line and
// wakes every item's waiter, but announces them in a few coalesced
// notifications, not one per item.
func TestExpirySweepBatches(t *testing.T) {
	f := newBlockFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 250
	var ids []string
	for i := 0; i < n; i++ {
		a, _ := f.pending(t, "turn")
		ids = append(ids, a.ID)
	}
	u := f.store.Pool.Config().ConnConfig.ConnString()
	hub := db.NewHub(u, slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-hub.Ready()
	sub := hub.Subscribe(db.ApprovalKey(ids[n/2]))
	defer sub.Close()
	listener, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(ctx, "LISTEN "+db.NotifyChannel); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Pool.Exec(ctx, `UPDATE approvals SET expires_at = now() WHERE status = 'pending'`); err != nil {
		t.Fatal(err)
	}
	if got, err := f.store.ExpireDue(ctx, 500); err != nil || got != n {
		t.Fatalf("expired %d (%v), want %d", got, err, n)
	}
	if _, err := f.store.Pool.Exec(ctx, `SELECT pg_notify($1, '{"a":"sentinel"}')`, db.NotifyChannel); err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	notes := 0
	for {
		note, err := listener.WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ch db.Change
		if err := json.Unmarshal([]byte(note.Payload), &ch); err != nil {
			t.Fatal(err)
		}
		if ch.ApprovalID == "sentinel" {
			break
		}
		notes++
		named[ch.ApprovalID] = true
		for _, id := range ch.ApprovalIDs {
			named[id] = true
		}
	}
	if notes > 3 {
		t.Errorf("%d notifications for one sweep of %d items, want a few coalesced ones", notes, n)
	}
	for _, id := range ids {
		if !named[id] {
			t.Fatalf("item %s was not announced", id)
		}
	}
	var lines int
	if err := f.store.Pool.QueryRow(ctx, `SELECT count(DISTINCT approval_id) FROM audit_events WHERE action = $1 AND approval_id = ANY($2)`,
		approval.ActionExpired, ids).Scan(&lines); err != nil || lines != n {
		t.Fatalf("%d expiry lines (%v), want %d", lines, err, n)
	}
	select {
	case <-sub.C:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter of an expired item was not woken by the coalesced notification")
	}
}
