package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"time"

	"github.com/countersign/countersign/db"
)

// audit loads n chained audit events and times the audit screen's filtered
// first page, a deep keyset page, and the CSV export's rows per second and
// peak heap.
func (b *benchServer) audit(ctx context.Context, n int, stdout io.Writer) error {
	start := time.Now()
	if err := b.loadAudit(ctx, n); err != nil {
		return err
	}
	load := time.Since(start)
	var total int64
	_ = b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events`).Scan(&total)
	if err := b.auditPages(ctx, total, load, stdout); err != nil {
		return err
	}
	if err := b.auditExport(ctx, stdout); err != nil {
		return err
	}
	rep, err := b.db.VerifyAudit(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  audit verify: %s\n", rep)
	return nil
}

// loadAudit inserts n audit events in batches, seals them into the chain
// and analyzes the table.
func (b *benchServer) loadAudit(ctx context.Context, n int) error {
	for done := 0; done < n; done += 100000 {
		batch := min(100000, n-done)
		if _, err := b.db.Pool.Exec(ctx, `INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool, conversation_id, turn_id, detail)
			SELECT 'user', 'user-' || (g % 50), 'User ' || (g % 50),
				(ARRAY['approved','rejected','approval requested','auto-approved by Always allow','expired','claimed'])[1 + g % 6],
				(ARRAY['mail','files','web','calendar','system'])[1 + g % 5],
				(ARRAY['send_email','delete_file','open_page','create_event','run_command','search_messages','read_file'])[1 + g % 7],
				'conv-' || (g % 1000), 'turn-' || g, jsonb_build_object('n', g)
			FROM generate_series($1::int, $2::int) g`, done+1, done+batch); err != nil {
			return err
		}
	}
	if err := b.db.SealAll(ctx); err != nil {
		return err
	}
	if _, err := b.db.Pool.Exec(ctx, `ANALYZE audit_events`); err != nil {
		return err
	}
	return nil
}

// timeListAudit times 30 reads of the audit page f.
func (b *benchServer) timeListAudit(ctx context.Context, f db.AuditFilter) ([]time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < 30; i++ {
		t0 := time.Now()
		if _, err := b.db.ListAudit(ctx, f); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(t0))
	}
	return ds, nil
}

// auditPages times the audit screen's filtered first page, a filtered
// deep keyset page and an unfiltered one, and prints them under the
// log's size (total events, loaded in load).
func (b *benchServer) auditPages(ctx context.Context, total int64, load time.Duration, stdout io.Writer) error {
	f := db.AuditFilter{Actions: []string{"approved"}, Tool: "send_email", Limit: 50}
	first, err := b.timeListAudit(ctx, f)
	if err != nil {
		return err
	}
	var deepID int64
	_ = b.db.Pool.QueryRow(ctx, `SELECT id FROM audit_events WHERE action = 'approved' AND tool = 'send_email' ORDER BY id LIMIT 1 OFFSET 100`).Scan(&deepID)
	deepF := f
	deepF.Before = deepID
	deep, err := b.timeListAudit(ctx, deepF)
	if err != nil {
		return err
	}
	unfiltered, err := b.timeListAudit(ctx, db.AuditFilter{Limit: 50, Before: deepID})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nAudit log with %d events (loaded and chained in %s)\n", total, load.Round(time.Millisecond))
	fmt.Fprintf(stdout, "  filtered first page (action + tool, 50 lines)   p50 %8s  p99 %8s\n", pct(first, 50), pct(first, 99))
	fmt.Fprintf(stdout, "  filtered deep keyset page (near the oldest)     p50 %8s  p99 %8s\n", pct(deep, 50), pct(deep, 99))
	fmt.Fprintf(stdout, "  unfiltered deep keyset page                     p50 %8s  p99 %8s\n", pct(unfiltered, 50), pct(unfiltered, 99))
	return nil
}

// auditExport streams the whole log as the CSV export does and prints its
// rows per second and peak heap.
func (b *benchServer) auditExport(ctx context.Context, stdout io.Writer) error {
	_, h0 := settledStats()
	var peak uint64
	var rows int64
	t0 := time.Now()
	cw := csv.NewWriter(io.Discard)
	var m runtime.MemStats
	err := b.db.StreamAudit(ctx, db.AuditFilter{}, func(l db.AuditLine) error {
		rows++
		detail, _ := json.Marshal(l.Detail)
		if err := cw.Write([]string{strconv.FormatInt(l.ID, 10), l.At.UTC().Format(time.RFC3339Nano), l.ActorName, l.Action,
			l.Connector, l.Tool, l.ConversationID, l.TurnID, string(detail), l.Hash}); err != nil {
			return err
		}
		if rows%20000 == 0 {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
		return nil
	})
	cw.Flush()
	if err != nil {
		return err
	}
	el := time.Since(t0)
	fmt.Fprintf(stdout, "  CSV export of all %d events: %s, %.0f rows/s, peak heap %.1f MiB (%.1f MiB above idle)\n",
		rows, el.Round(time.Millisecond), float64(rows)/el.Seconds(), mib(peak), mib(peak)-mib(h0))
	return nil
}
