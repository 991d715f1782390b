package db

import (
	"context"
	"time"

	"github.com/countersign/countersign/approval"
)

// ErrToolChanged is errToolChanged, for the tests.
var ErrToolChanged = errToolChanged

// OpenPendingUnder sends the writes of a pending outcome for tool as the
// caller read it, in one batch on the pool, as the check's fast path does.
func (d *DB) OpenPendingUnder(ctx context.Context, key APIKey, req CheckRequest, tool Tool) (CheckResult, error) {
	res := CheckResult{Outcome: approval.Outcome{Verdict: approval.Pending}, Tool: tool}
	err := applyOutcome(ctx, d.Pool, key, req, approval.ParseArguments(req.Arguments), tool, turnFacts{}, &res,
		CheckOptions{Timeout: time.Minute})
	return res, err
}

// OpenPendingGroupedUnder does what OpenPendingUnder does through the
// group writer, with whatever concurrent checks queue.
func (d *DB) OpenPendingGroupedUnder(ctx context.Context, key APIKey, req CheckRequest, tool Tool) (CheckResult, error) {
	return d.OpenPendingGroupedOnTheWay(ctx, key, req, tool, nil)
}

// OnTheWayCount is a check counted on its way to the group writer.
type OnTheWayCount = onTheWay

// OnTheWay counts a check on its way to the group writer, as a check of a
// tool known to ask is counted.
func (d *DB) OnTheWay() *onTheWay { return d.groups.onTheWay() }

// Leave stops counting w.
func (w *onTheWay) Leave() { w.leave() }

// SetGroupLinger sets how long the group writer waits at most for checks
// on their way.
func (d *DB) SetGroupLinger(l time.Duration) { d.groups.linger = l }

// OpenPendingGroupedOnTheWay is OpenPendingGroupedUnder for the check
// counted by way, which stops being counted once queued.
func (d *DB) OpenPendingGroupedOnTheWay(ctx context.Context, key APIKey, req CheckRequest, tool Tool, way *onTheWay) (CheckResult, error) {
	res := CheckResult{Outcome: approval.Outcome{Verdict: approval.Pending}, Tool: tool}
	e, err := outcomeRecord(key, req, approval.ParseArguments(req.Arguments), tool, turnFacts{}, res.Outcome,
		CheckOptions{Timeout: time.Minute}, true)
	if err == nil {
		e.way = way
		if err = d.writeGrouped(ctx, e); err == nil {
			err = e.answer(&res)
		}
	}
	return res, toolChanged(err)
}

// ReadsFactsFirst says whether the next check of the tool reads the turn's
// facts in its first statement (keyAndToolSQL).
func (d *DB) ReadsFactsFirst(connector, tool string) bool { return d.asking.asks(connector, tool) }

// WritesQueued is how many checks wait in the group writer's queue.
func (d *DB) WritesQueued() int {
	d.groups.mu.Lock()
	defer d.groups.mu.Unlock()
	return len(d.groups.queue)
}

// Coming is how many checks are counted on their way to the group writer.
func (d *DB) Coming() int64 { return d.groups.coming.Load() }

// FactsReadApart is how many checks have read the turn's facts in a
// statement of their own.
func (d *DB) FactsReadApart() int64 { return d.factsApart.Load() }

// SetMaxReaders sets how many group reads may be in flight at once.
func (d *DB) SetMaxReaders(n int) { d.reads.max = n }

// ReadsQueued is how many checks wait for the next group read.
func (d *DB) ReadsQueued() int {
	d.reads.mu.Lock()
	defer d.reads.mu.Unlock()
	return len(d.reads.queue)
}

// MaxGroupReads is how many checks one group read carries at most.
const MaxGroupReads = maxGroupReads

// PendingVacuumEvery is pendingVacuumEvery, for the tests.
const PendingVacuumEvery = pendingVacuumEvery
