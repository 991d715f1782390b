package db_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

func record(t *testing.T, store *db.DB, n int, ev func(i int) approval.AuditEvent) {
	t.Helper()
	ctx := context.Background()
	// One transaction: all lines share one timestamp, which paging must survive.
	err := store.InTx(ctx, func(tx pgx.Tx) error {
		for i := 0; i < n; i++ {
			if err := db.RecordAudit(ctx, tx, ev(i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestAuditChain(t *testing.T) {
	store, u := testenv.OpenDB(t)
	ctx := context.Background()
	record(t, store, 20, func(i int) approval.AuditEvent {
		return approval.AuditEvent{Actor: approval.SystemActor, Action: "approved", Tool: fmt.Sprint("t", i)}
	})
	if err := store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := store.VerifyAudit(ctx)
	if err != nil || !r.Intact || r.Events != 20 {
		t.Fatalf("%+v %v", r, err)
	}
	// Two instances writing at once keep one valid chain.
	other, err := db.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8*25)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s := store
			if w%2 == 1 {
				s = other
			}
			for i := 0; i < 25; i++ {
				errs <- s.InTx(ctx, func(tx pgx.Tx) error {
					return db.RecordAudit(ctx, tx, approval.AuditEvent{Actor: approval.SystemActor, Action: "expired", Tool: fmt.Sprint(w, "-", i)})
				})
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal("concurrent write:", err)
		}
	}
	if err := other.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := store.VerifyAudit(ctx); err != nil || !r.Intact || r.Events != 220 {
		t.Fatalf("after concurrent writers: %+v %v", r, err)
	}

	t.Run("Altered", func(t *testing.T) {
		testenv.AsAuditAdmin(t, store, `UPDATE audit_events SET action = 'rejected' WHERE `+testenv.AuditEventAt(7))
		r, _ := store.VerifyAudit(ctx)
		if r.Intact || r.BrokenAt != 7 || !strings.Contains(r.Problem, "altered") {
			t.Fatalf("%+v", r)
		}
		testenv.AsAuditAdmin(t, store, `UPDATE audit_events SET action = 'approved' WHERE `+testenv.AuditEventAt(7))
		if r, _ := store.VerifyAudit(ctx); !r.Intact {
			t.Fatalf("restoring the content should restore the chain: %+v", r)
		}
	})
	t.Run("AlteredAndRehashed", func(t *testing.T) {
		testenv.AsAuditAdmin(t, store, `UPDATE audit_events e SET action = 'rejected' WHERE `+testenv.AuditEventAt(9),
			`UPDATE audit_chain c SET hash = audit_chain_hash(c.prev_hash, c.seq, e) FROM audit_events e
			WHERE e.id = c.event_id AND c.seq = 9`)
		r, _ := store.VerifyAudit(ctx)
		if r.Intact || r.BrokenAt != 10 {
			t.Fatalf("a re-hashed edit must break the next link: %+v", r)
		}
	})
	t.Run("Deleted", func(t *testing.T) {
		testenv.AsAuditAdmin(t, store, `DELETE FROM audit_events WHERE `+testenv.AuditEventAt(5))
		r, _ := store.VerifyAudit(ctx)
		if r.Intact || r.BrokenAt != 5 || !strings.Contains(r.Problem, "missing") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("SealDeleted", func(t *testing.T) {
		testenv.AsAuditAdmin(t, store, `DELETE FROM audit_chain WHERE seq = 3`)
		r, _ := store.VerifyAudit(ctx)
		if r.Intact || r.BrokenAt != 3 || !strings.Contains(r.Problem, "missing") {
			t.Fatalf("%+v", r)
		}
	})
}

func TestAuditPaging(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	record(t, store, 137, func(i int) approval.AuditEvent {
		action := "approved"
		if i%3 == 0 {
			action = "rejected"
		}
		return approval.AuditEvent{Actor: approval.Actor{Kind: "user", ID: "u1", Name: "Maya"}, Action: action,
			Connector: "mail", Tool: []string{"send_email", "delete_message"}[i%2], Detail: map[string]any{"i": i}}
	})
	f := db.AuditFilter{Actions: []string{"approved"}, Tool: "send_email", Limit: 10}
	rows, err := store.Pool.Query(ctx, `SELECT id FROM audit_events WHERE action = 'approved' AND tool = 'send_email' ORDER BY id DESC`)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	// i even and not a multiple of 3, for i < 137: five pages of ten or fewer.
	if err != nil || len(want) != 46 {
		t.Fatalf("%d matching lines (%v), want 46", len(want), err)
	}
	// Older, page by page, then back with newer.
	var got []int64
	var pages []db.AuditPage
	for {
		p, err := store.ListAudit(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
		for _, l := range p.Lines {
			got = append(got, l.ID)
		}
		if !p.HasOlder {
			break
		}
		f.Before = p.OldestID
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("paging older:\n got %v\nwant %v", got, want)
	}
	last := pages[len(pages)-1]
	back, err := store.ListAudit(ctx, db.AuditFilter{Actions: f.Actions, Tool: f.Tool, Limit: 10, After: last.NewestID})
	if err != nil {
		t.Fatal(err)
	}
	prev := pages[len(pages)-2]
	if fmt.Sprint(ids(back.Lines)) != fmt.Sprint(ids(prev.Lines)) || !back.HasOlder {
		t.Fatalf("newer page %v, want %v", ids(back.Lines), ids(prev.Lines))
	}
	first, err := store.ListAudit(ctx, db.AuditFilter{Actions: f.Actions, Tool: f.Tool, Limit: 10, After: pages[1].NewestID})
	if err != nil || first.HasNewer || fmt.Sprint(ids(first.Lines)) != fmt.Sprint(ids(pages[0].Lines)) {
		t.Fatalf("back to the first page: %v newer=%v", ids(first.Lines), first.HasNewer)
	}
	// Streaming gives the same lines as the pages.
	var streamed []int64
	if err := store.StreamAudit(ctx, db.AuditFilter{Actions: f.Actions, Tool: f.Tool}, func(l db.AuditLine) error {
		streamed = append(streamed, l.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(streamed) != fmt.Sprint(want) {
		t.Fatal("stream differs from the pages")
	}
}

func ids(ls []db.AuditLine) []int64 {
	var out []int64
	for _, l := range ls {
		out = append(out, l.ID)
	}
	return out
}
