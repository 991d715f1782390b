package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// sampleWaits samples, every 5 ms until the returned stop is called, what
// this database's busy backends wait on, the floors' connections left out;
// stop returns the samples taken and the counts per wait (advisory lock
// waits included).
func (b *benchServer) sampleWaits(ctx context.Context) func() (int, map[string]int) {
	ctx, cancel := context.WithCancel(ctx)
	waits := map[string]int{}
	done := make(chan int)
	go func() {
		samples := 0
		for ctx.Err() == nil {
			rows, err := b.db.Pool.Query(ctx, `SELECT COALESCE(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
				WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
				AND application_name <> $1`, floorApp)
			if err == nil {
				for rows.Next() {
					var w string
					if rows.Scan(&w) == nil {
						waits[w]++
					}
				}
				rows.Close()
				samples++
			}
			time.Sleep(5 * time.Millisecond)
		}
		done <- samples
	}()
	return func() (int, map[string]int) { cancel(); n := <-done; return n, waits }
}

// topWaits is the most frequent waits, in words.
func topWaits(waits map[string]int, n int) string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range waits {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v })
	var out []string
	for i := 0; i < len(l) && i < n; i++ {
		out = append(out, fmt.Sprintf("%s %d", l[i].k, l[i].v))
	}
	return strings.Join(out, ", ")
}

// sampleUnsealed samples, every 50 ms until the returned stop is called,
// the age of the oldest audit line not sealed yet; stop returns the largest
// seen: the unsealed window under the load of the moment.
func (b *benchServer) sampleUnsealed(ctx context.Context) func() time.Duration {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan time.Duration)
	go func() {
		var worst time.Duration
		for ctx.Err() == nil {
			var secs float64
			// Read from the sealer's queue (audit_unsealed): a bare min(at)
			// over the log is planned as a walk of the time index from the
			// oldest line, past every sealed one — milliseconds of the
			// database's time per sample, taken from the load being
			// measured.
			if err := b.db.Pool.QueryRow(ctx, `SELECT COALESCE(extract(epoch FROM clock_timestamp() - min(at)), 0)::float8
				FROM (SELECT at FROM audit_unsealed OFFSET 0) u`).Scan(&secs); err == nil {
				worst = max(worst, time.Duration(secs*float64(time.Second)))
			}
			time.Sleep(50 * time.Millisecond)
		}
		done <- worst
	}()
	return func() time.Duration { cancel(); return <-done }
}
