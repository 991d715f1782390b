package notify

import (
	"context"

	"github.com/countersign/countersign/db"
)

// batch is what the pipeline read once for the events it plans together
// (Pipeline.plan), so that a burst of items costs a statement per batch
// rather than one or two per item: who may decide each new item
// (db.DecidersOfMany, the same rule as db.DecidersOf) and, when the push
// channel is on, those people's devices. What is not in it is read one by
// one, as before.
type batch struct {
	deciders map[string][]string // item id → its deciders
	devices  map[string][]Target // subject → their push devices
}

type batchKey struct{}

// batchOf is the batch ctx carries, or nil.
func batchOf(ctx context.Context) *batch {
	b, _ := ctx.Value(batchKey{}).(*batch)
	return b
}

// preparer is implemented by channels that read, for a whole batch, what
// their Targets will ask for.
type preparer interface {
	prepare(ctx context.Context, b *batch, evs []db.NotificationEvent) error
}

// prepareBatch reads the deciders of evs' new items in one statement and
// lets each channel that can read its part for the batch; the returned
// context carries it to Targets.
func (p *Pipeline) prepareBatch(ctx context.Context, evs []db.NotificationEvent) (context.Context, error) {
	var ids []string
	for _, ev := range evs {
		if asksDeciders(ev) {
			ids = append(ids, *ev.ApprovalID)
		}
	}
	b := &batch{}
	var err error
	if b.deciders, err = p.db.DecidersOfMany(ctx, ids); err != nil {
		return ctx, err
	}
	ctx = context.WithValue(ctx, batchKey{}, b)
	for _, c := range p.channels {
		if pr, ok := c.(preparer); ok {
			if err := pr.prepare(ctx, b, evs); err != nil {
				return ctx, err
			}
		}
	}
	return ctx, nil
}
