package db

import (
	"context"
	"sync"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// auditGroup writes the audit lines of concurrent checks together. A check
// allowed by a standing grant, or refused, records one audit line and
// nothing else; many of them at once would each pay a transaction, a WAL
// flush and a turn on the audit table's busiest index pages. Instead each
// waits in a queue, and one writer at a time takes everything queued and
// writes it in one batch (one implicit transaction): the grants' last use
// and every line. Every waiter is answered only after that commit, with its
// outcome — so no call runs before its line is stored — and a failed batch
// fails every check in it, which then does not run. Under light load a
// group is one check and costs what it did alone.
type auditGroup struct {
	mu      sync.Mutex
	queue   []*auditEntry
	writing bool
}

// groupTimeout bounds one group's write.
const groupTimeout = 10 * time.Second

type auditEntry struct {
	ev    approval.AuditEvent
	grant int64 // the standing grant used, whose last use is noted; 0 for none
	done  chan error
}

// record stores ev (and notes the use of grant, if not 0) with whatever
// else is queued, and returns once it is committed or failed.
func (d *DB) recordGrouped(ctx context.Context, ev approval.AuditEvent, grant int64) error {
	e := &auditEntry{ev: ev, grant: grant, done: make(chan error, 1)}
	g := &d.audits
	g.mu.Lock()
	g.queue = append(g.queue, e)
	lead := !g.writing
	g.writing = true
	g.mu.Unlock()
	if lead {
		// The writer runs apart from this request's context: the others in
		// its group must not fail because this caller went away.
		go d.writeGroups()
	}
	select {
	case err := <-e.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeGroups writes groups until the queue is empty.
func (d *DB) writeGroups() {
	g := &d.audits
	for {
		g.mu.Lock()
		group := g.queue
		g.queue = nil
		if len(group) == 0 {
			g.writing = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		err := d.writeGroup(group)
		for _, e := range group {
			e.done <- err
		}
	}
}

func (d *DB) writeGroup(group []*auditEntry) error {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	evs := make([]approval.AuditEvent, len(group))
	var grants []int64
	for i, e := range group {
		evs[i] = e.ev
		if e.grant != 0 {
			grants = append(grants, e.grant)
		}
	}
	b := &pgx.Batch{}
	q := batchExec{b}
	if len(grants) > 0 {
		b.Queue(noteGrantUseSQL, grants)
	}
	if err := RecordAuditMany(ctx, q, evs); err != nil {
		return err
	}
	return translate("record audit", d.sendBatch(ctx, b))
}
