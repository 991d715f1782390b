package db

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// writeGroups writes what concurrent checks record together. A check
// allowed by a standing grant, or refused, records one audit line; a check
// that asks a person records a pending item (its row, full text, outbox
// event and audit line, and the notification that wakes its owner's
// screens). Many of them at once would each pay a transaction, a WAL flush
// and — for a pending item — a turn at the lock Postgres takes to queue a
// NOTIFY at commit, which it holds until the commit is flushed, so every
// notifying transaction of the cluster waits for the one before it.
// Instead each check waits in a queue, and one writer at a time takes
// everything queued and writes it in one batch (one implicit transaction)
// with one multi-row audit insert and one set of notifications. Every
// waiter is answered only after that commit, with its outcome — so no call
// runs before its line is stored, and no item is announced before it
// exists. A failed group is written again one check at a time, so that each
// check gets its own answer (a pending item whose tool's policy changed, a
// race lost to an identical call); a check whose own write fails does not
// run. Under light load a group is one check and costs what it did alone.
// A writer about to write waits a moment (groupLinger at most) for the
// checks this instance is handling that will likely write (onTheWay), and
// for as many checks as its last group took, unless its last wait for them
// ran out: under steady load the runtimes that group answered come back
// together.
type writeGroups struct {
	mu      sync.Mutex
	queue   []*groupEntry
	writing bool
	coming  atomic.Int64  // checks on their way (onTheWay)
	arrived chan struct{} // a check queued, or one on its way left
	linger  time.Duration // groupLinger
	last    int           // how many live checks the last group took (under mu)
	ranOut  bool          // the last wait for them ended at the linger (under mu)
	max     int           // the most checks one group takes; 0: maxGroupWrites (under mu)
	stats   groupStats
}

// groupLinger bounds how long a writer waits for checks on their way and
// for as many as its last group took. Each group costs a commit and its WAL
// flush — with three instances on one Postgres, about 0.4 ms of the
// machine's CPU in all — so a group that waits for the checks already
// under way costs less per check than one written without them. Under
// load, the runtimes a group answered take a millisecond or more to come
// back; 4 ms let three instances' groups reach nearly every runtime of
// each (5 checks of 5.3), where 2 ms made groups of 4. A lone runtime's
// next check is as many as its last group, so it does not wait; after a
// burst, a check waits for others at most once (awaitComing). Only the
// writes wait: a check of a tool its policy allows writes nothing and is
// never counted.
const groupLinger = 4 * time.Millisecond

// maxGroupWrites bounds one group, so that a burst of thousands of checks
// is written as several transactions of bounded size rather than one.
const maxGroupWrites = 256

// LimitWriteGroups makes this instance's writer take at most n checks per
// group (n <= 0: maxGroupWrites). The bench uses it to compare one
// instance with several at the same group size.
func (d *DB) LimitWriteGroups(n int) {
	g := &d.groups
	g.mu.Lock()
	g.max = n
	g.mu.Unlock()
}

// limit is the most checks one group takes (under mu).
func (g *writeGroups) limit() int { return cmp.Or(g.max, maxGroupWrites) }

// onTheWay is a check that will likely write, counted from when that is
// known until it has queued its write or has left without one; the writer
// waits for it (awaitComing). A nil onTheWay counts nothing.
type onTheWay struct {
	g    *writeGroups
	left atomic.Bool
}

// onTheWay counts a check on its way to the writer.
func (g *writeGroups) onTheWay() *onTheWay {
	g.coming.Add(1)
	return &onTheWay{g: g}
}

// leave stops counting w, once: the writer stops waiting for it.
func (w *onTheWay) leave() {
	if w == nil || w.left.Swap(true) {
		return
	}
	w.g.coming.Add(-1)
	w.g.signal()
}

// signal wakes a writer waiting for checks on their way.
func (g *writeGroups) signal() {
	select {
	case g.arrived <- struct{}{}:
	default:
	}
}

// groupTimeout bounds one group's write, and one group read.
const groupTimeout = 10 * time.Second

type groupEntry struct {
	ctx     context.Context // the check's; a check gone before its group is written is skipped
	ev      approval.AuditEvent
	grant   int64         // the standing grant used, whose last use is noted; 0 for none
	pending *pendingWrite // a pending item to create, with ev its audit line; nil for a line alone
	way     *onTheWay     // the check, counted while on its way; nil if it was not
	done    chan error
}

func (e *groupEntry) caller() (context.Context, chan error) { return e.ctx, e.done }

// answer puts what the entry created into res: its item, for a pending
// one.
func (e *groupEntry) answer(res *CheckResult) error {
	if e.pending == nil {
		return nil
	}
	a, err := e.pending.approval()
	if err == nil {
		res.Approval = &a
	}
	return err
}

// writeGrouped stores e with whatever else is queued, and returns once it
// is committed or failed.
func (d *DB) writeGrouped(ctx context.Context, e *groupEntry) error {
	e.ctx, e.done = ctx, make(chan error, 1)
	g := &d.groups
	g.mu.Lock()
	g.queue = append(g.queue, e)
	// Queued before it stops being counted: a writer that sees no check on
	// its way finds this one in the queue.
	e.way.leave()
	g.signal()
	lead := !g.writing
	g.writing = true
	g.mu.Unlock()
	if lead {
		// The writer runs apart from this request's context: the others in
		// its group must not fail because this caller went away.
		go d.writeQueued()
	}
	select {
	case err := <-e.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeQueued writes groups until the queue is empty.
func (d *DB) writeQueued() {
	g := &d.groups
	carried := false
	for {
		// Checks left queued by a full group have waited already.
		if !carried {
			g.awaitComing()
		}
		g.mu.Lock()
		group := g.queue
		g.queue = nil
		if n := g.limit(); len(group) > n {
			group, g.queue = group[:n], slices.Clone(group[n:])
		}
		carried = len(g.queue) > 0
		if len(group) == 0 {
			// The next check starts a writer that waits only for the
			// checks on their way.
			g.writing, g.last = false, 0
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		// A check whose caller went away before its group was written is
		// not written: nothing would answer it, and a prompt nobody waits
		// for must not appear.
		live := stillAwaited(group)
		g.mu.Lock()
		g.last = len(live)
		g.mu.Unlock()
		if len(live) == 0 {
			continue
		}
		refused, err := d.writeGroup(live)
		if err != nil && len(live) > 1 && refused {
			// The database refused one statement, so nothing of the group
			// was kept: each check is written alone and gets its own
			// answer. Any other failure (a lost connection, the group's
			// deadline) may have come after the commit, or would only
			// recur: every check in the group fails and does not run.
			for _, e := range live {
				if err := e.ctx.Err(); err != nil {
					e.done <- err
					continue
				}
				_, err := d.writeGroup([]*groupEntry{e})
				e.done <- err
			}
			continue
		}
		for _, e := range live {
			e.done <- err
		}
	}
}

// entryError says whether err is the database refusing a statement of a
// group on its merits — a constraint, a value, a raised exception, a
// policy changed since it was read, a deadlock — which one check's write
// can cause and the others' writes then succeed without.
func entryError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	for _, class := range []string{"22", "23", "40", "P0", "CS"} {
		if strings.HasPrefix(pgErr.Code, class) {
			return true
		}
	}
	return false
}

// awaitComing waits, at most its linger (groupLinger), while checks are on
// their way (onTheWay) or fewer checks are queued than the last group took:
// they would otherwise make the next group, and each group costs a commit.
// A writer waits from when it answered its last group, or from its start.
// When a wait for the last group's size runs out, the runtimes did not
// come back (a burst has passed, or checks arrive one by one): the next
// group waits only for the checks on their way, and the one after that
// for that group's size again. So a check waits for others at most one
// linger, and after a burst only one group waits in vain.
func (g *writeGroups) awaitComing() {
	g.mu.Lock()
	want := g.last
	if g.ranOut {
		want = 0
	}
	g.ranOut = false
	g.mu.Unlock()
	short := func() (coming, fewer bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.queue) >= g.limit() {
			return false, false // a full group waits for nothing
		}
		return g.coming.Load() > 0, len(g.queue) < want
	}
	if coming, fewer := short(); !coming && !fewer {
		return
	}
	t := time.NewTimer(g.linger)
	defer t.Stop()
	for {
		select {
		case <-g.arrived:
		case <-t.C:
			g.mu.Lock()
			g.ranOut = len(g.queue) < want
			g.mu.Unlock()
			return
		}
		if coming, fewer := short(); !coming && !fewer {
			return
		}
	}
}

// writeGroup writes group in one batch. refused says that the database
// refused one of its statements on its merits (entryError), judged on the
// database's own error before it is translated for the checks.
func (d *DB) writeGroup(group []*groupEntry) (refused bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	b := &pgx.Batch{}
	created, err := queueEntries(ctx, b, group)
	if err != nil {
		return false, err
	}
	if err = d.sendBatch(ctx, b); err == nil {
		created()
		d.groups.stats.add(len(group))
		return false, nil
	}
	refused = entryError(err)
	if isUniqueViolation(err) {
		return refused, err // a race lost to an identical call: the check answers it
	}
	return refused, toolChanged(translate("write group", err))
}

// queueEntries queues on b what entries record: the grants' use, each
// tool's policy held once, the pending items' rows, full texts and outbox
// events, every audit line in one insert, and one set of notifications.
// Once the batch has succeeded, created gives the pending items the times
// the database gave them.
func queueEntries(ctx context.Context, b *pgx.Batch, entries []*groupEntry) (created func(), err error) {
	q := batchExec{b}
	evs := make([]approval.AuditEvent, len(entries))
	var grants []int64
	var held []heldPolicy
	var changes []Change
	var pending []*pendingWrite
	for i, e := range entries {
		evs[i] = e.ev
		if e.grant != 0 {
			grants = append(grants, e.grant)
		}
		if e.pending != nil {
			pending = append(pending, e.pending)
			held = append(held, e.pending.held())
			changes = append(changes, e.pending.change())
		}
	}
	if len(grants) > 0 {
		b.Queue(noteGrantUseSQL, grants)
	}
	// Tools are held in one order, so that two groups never wait on each
	// other's locks.
	slices.SortFunc(held, func(a, b heldPolicy) int {
		return cmp.Or(cmp.Compare(a.tool, b.tool), cmp.Compare(a.version, b.version))
	})
	for _, h := range slices.Compact(held) {
		b.Queue(`SELECT hold_tool_policy($1, $2)`, h.tool, h.version)
	}
	created = func() {}
	if len(pending) > 0 {
		if created, err = queuePending(ctx, b, pending); err != nil {
			return nil, err
		}
	}
	if err := RecordAuditMany(ctx, q, evs); err != nil {
		return nil, err
	}
	if len(changes) > 0 {
		if err := errors.Join(notifyOutbox(ctx, q), notifyMany(ctx, q, changes)); err != nil {
			return nil, err
		}
	}
	return created, nil
}
