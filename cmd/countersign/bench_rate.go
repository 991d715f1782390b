package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/db"
)

// runOnce is one operation of a throughput measurement, by worker w.
type runOnce func(ctx context.Context, w, i int) error

// rateResult is what a throughput measurement saw.
type rateResult struct {
	n      int
	el     time.Duration
	lat    []time.Duration
	groups string // the checks' mean group sizes (groupSizes), if any
	warm   int    // operations done in the warm-up, not counted in n
	cpu    cpuTurns
}

// groupSizes says how many group statements an instance sent in d (a
// difference of db.GroupStats) and how many checks each carried on average.
func groupSizes(d db.GroupStats) string {
	per := func(checks, groups int64) string {
		if groups == 0 {
			return "none"
		}
		return fmt.Sprintf("%.1f checks each", float64(checks)/float64(groups))
	}
	return fmt.Sprintf("reads: %d statements, %s; writes: %d batches, %s", d.ReadGroups, per(d.Reads, d.ReadGroups),
		d.WriteGroups, per(d.Writes, d.WriteGroups))
}

func (r rateResult) perSec() float64 { return float64(r.n) / r.el.Seconds() }

// measureRate runs op from workers goroutines for d (after a short warm-up
// that is not counted) and returns the completed operations and their
// latencies. The first error stops the measurement.
func measureRate(ctx context.Context, workers int, d time.Duration, op runOnce) (rateResult, error) {
	var seq atomic.Int64
	run := func(d time.Duration, keep bool) (rateResult, error) {
		var mu sync.Mutex
		var res rateResult
		var firstErr error
		deadline := time.Now().Add(d)
		start := time.Now()
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				var lat []time.Duration
				var err error
				for time.Now().Before(deadline) && ctx.Err() == nil {
					t0 := time.Now()
					if err = op(ctx, w, int(seq.Add(1))); err != nil {
						break
					}
					lat = append(lat, time.Since(t0))
				}
				mu.Lock()
				defer mu.Unlock()
				res.n += len(lat)
				if keep {
					res.lat = append(res.lat, lat...)
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
			}(w)
		}
		wg.Wait()
		res.el = time.Since(start)
		return res, firstErr
	}
	warm, err := run(d/8, false)
	if err != nil {
		return rateResult{}, err
	}
	res, err := run(d, true)
	res.warm = warm.n
	return res, err
}

// turnCount is how alternate counts the turns of its first measurement:
// drain waits for what a turn left behind and counts as part of it, tidy
// runs after it uncounted, and cpu reads the CPU time used so far.
type turnCount struct {
	drain, tidy func(context.Context) error
	cpu         func() cpuUse
}

// alternations is how many turns each of two alternated measurements
// takes (alternate).
const alternations = 4

// alternate measures a and b in turns, slices times each for d/slices,
// and returns each one's slices together: both see the machine as it is
// during adjacent seconds, so its drift falls on both alike. The turns go
// a b, b a, a b, ...: a steady drift favours neither. After each turn of
// a, t.drain waits for the work a left behind (sealing its audit lines,
// planning its notifications), so that b's turn does not carry it, and
// t.tidy runs; a's CPU (cpuTurns, read with t.cpu) includes the draining,
// not the tidying. errB names a failure of b.
func alternate(ctx context.Context, workers int, d time.Duration, slices int, a, b runOnce, t turnCount, errB string) (ra, rb rateResult, err error) {
	// Known until a reading is not (cpuUse.plus): each turn's reading is
	// added to these.
	ra.cpu.use.known, rb.cpu.use.known = true, true
	add := func(sum *rateResult, op runOnce, drain func(context.Context) error) error {
		start, c0 := time.Now(), t.cpu()
		r, err := measureRate(ctx, workers, d/time.Duration(slices), op)
		sum.n, sum.el, sum.lat = sum.n+r.n, sum.el+r.el, append(sum.lat, r.lat...)
		if err == nil && drain != nil {
			err = drain(ctx)
		}
		sum.cpu.use = sum.cpu.use.plus(t.cpu().since(c0))
		sum.cpu.ops += r.warm + r.n
		sum.cpu.wall += time.Since(start)
		return err
	}
	turnA := func() error {
		if err := add(&ra, a, t.drain); err != nil {
			return err
		}
		return t.tidy(ctx)
	}
	turnB := func() error {
		if err := add(&rb, b, nil); err != nil {
			return fmt.Errorf("%s: %w", errB, err)
		}
		return nil
	}
	for i := range slices {
		first, second := turnA, turnB
		if i%2 == 1 {
			first, second = turnB, turnA
		}
		if err := first(); err != nil {
			return ra, rb, err
		}
		if err := second(); err != nil {
			return ra, rb, err
		}
	}
	return ra, rb, nil
}
