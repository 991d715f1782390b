// Package notify is the one place that decides who is told what about a
// committed change, and tells them: by email, by webhook, and through any
// other Channel. It is fed by the outbox the db package writes in the same
// transaction as each change (db.RecordEvent), never by handlers, and it
// sends off the request path: a slow mail server or receiver never delays
// a check or a decision.
package notify

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/countersign/countersign/db"
)

// Channel is one way of telling: email, webhooks, and later Web Push. To
// add one, implement it and pass it to New.
type Channel interface {
	// Name is the channel's name in the deliveries table ("email",
	// "webhook", "push").
	Name() string
	// Targets says who or what on this channel hears of ev: one delivery is
	// recorded per target (a person's subject, a webhook id, a device), not
	// sent before NotBefore. No targets: the channel ignores ev.
	Targets(ctx context.Context, ev db.NotificationEvent) ([]Target, error)
	// Send delivers deliveries to one target: one at a time, or all of a
	// target's due deliveries together when the channel is Grouped.
	Send(ctx context.Context, target string, ds []db.Delivery) Result
}

// SameForKindAndOwner is implemented by channels whose targets for an
// event depend only on its kind and owner (a person's devices, the webhooks
// subscribed to a kind): planning asks them once per kind and owner in a
// batch of events, not once per event.
type SameForKindAndOwner interface {
	TargetsDependOnKindAndOwnerOnly()
}

// Grouped is implemented by channels that send a target's due deliveries
// in one message (email groups a burst of items into one mail).
type Grouped interface {
	GroupByTarget() bool
}

// Target is one recipient of an event on a channel.
type Target struct {
	ID        string
	NotBefore time.Time // zero: now
}

// Result is how a send went.
type Result struct {
	StatusCode int   // the receiver's HTTP status, when there is one
	Err        error // nil: sent
	// Permanent says that retrying cannot help (a webhook was deleted, a
	// push subscription is gone, mail was turned off): no more attempts.
	Permanent bool
	// Skipped says there was nothing left to send (recorded as such).
	Skipped bool
}

// Options tune the pipeline; zero values take the defaults.
type Options struct {
	Now         func() time.Time                // the pipeline's clock (tests move it)
	Backoff     func(attempt int) time.Duration // pause after a failed attempt
	GiveUpAfter time.Duration                   // stop retrying this long after a delivery was planned (24h)
	Lease       time.Duration                   // how long a claimed delivery is reserved for its instance (2m)
	Sweep       time.Duration                   // how often due retries are looked for without a wake-up (5s)
	Parallel    int                             // sends in flight per channel (8)
	Keep        time.Duration                   // how long finished deliveries stay listed (7 days)
}

// DefaultBackoff doubles from 10 s up to one hour.
func DefaultBackoff(attempt int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < attempt && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.GiveUpAfter <= 0 {
		o.GiveUpAfter = 24 * time.Hour
	}
	if o.Lease <= 0 {
		o.Lease = 2 * time.Minute
	}
	if o.Sweep <= 0 {
		o.Sweep = 5 * time.Second
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.Keep <= 0 {
		o.Keep = 7 * 24 * time.Hour
	}
}

// Pipeline plans the outbox's events into deliveries and sends them. Every
// instance runs one; the database shares the work among them (SKIP LOCKED
// and leases), so each delivery is sent once.
type Pipeline struct {
	db       *db.DB
	hub      *db.Hub
	log      *slog.Logger
	opt      Options
	channels []Channel
	wake     chan struct{}
	workers  map[string]chan struct{}
}

// New prepares a pipeline over store; hub wakes it when an event commits.
func New(store *db.DB, hub *db.Hub, log *slog.Logger, opt Options, channels ...Channel) *Pipeline {
	opt.defaults()
	p := &Pipeline{db: store, hub: hub, log: log, opt: opt, channels: channels,
		wake: make(chan struct{}, 1), workers: map[string]chan struct{}{}}
	for _, c := range channels {
		p.workers[c.Name()] = make(chan struct{}, 1)
	}
	return p
}

// Kick makes the pipeline look for work now (tests, after moving the clock).
func (p *Pipeline) Kick() { poke(p.wake) }

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Run plans and delivers until ctx ends.
func (p *Pipeline) Run(ctx context.Context) {
	var sub *db.Subscription
	if p.hub != nil {
		sub = p.hub.Subscribe(db.OutboxKey)
		defer sub.Close()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, c := range p.channels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.work(ctx, c)
		}()
	}
	tick := time.NewTicker(p.opt.Sweep)
	defer tick.Stop()
	var pokes <-chan struct{}
	if sub != nil {
		pokes = sub.C
	}
	var pruned time.Time
	for {
		if now := p.opt.Now(); now.Sub(pruned) > time.Hour {
			pruned = now
			if _, err := p.db.PruneNotifications(ctx, now.Add(-p.opt.Keep)); err != nil && ctx.Err() == nil {
				p.log.Warn("notifications: prune failed", "err", err)
			}
		}
		p.plan(ctx)
		for _, w := range p.workers {
			poke(w)
		}
		select {
		case <-ctx.Done():
			return
		case <-pokes:
		case <-p.wake:
		case <-tick.C:
		}
	}
}

// plan turns unplanned events into deliveries, in batches.
func (p *Pipeline) plan(ctx context.Context) {
	for ctx.Err() == nil {
		now := p.opt.Now()
		type asked struct{ channel, kind, owner string }
		known := map[asked][]Target{}
		bctx := ctx
		n, err := p.db.PlanEventsWith(ctx, 100, now, func(evs []db.NotificationEvent) (err error) {
			bctx, err = p.prepareBatch(ctx, evs)
			return err
		}, func(ev db.NotificationEvent) ([]db.NewDelivery, error) {
			var out []db.NewDelivery
			for _, c := range p.channels {
				_, same := c.(SameForKindAndOwner)
				// An escalation's people depend on its item's team.
				same = same && !escalated(ev)
				k := asked{c.Name(), ev.Kind, ev.Owner}
				targets, ok := known[k]
				if !ok {
					var err error
					if targets, err = c.Targets(bctx, ev); err != nil {
						return nil, fmt.Errorf("%s targets: %w", c.Name(), err)
					}
					if same {
						known[k] = targets
					}
				}
				for _, t := range targets {
					nb := t.NotBefore
					if nb.IsZero() || nb.Before(now) {
						nb = now
					}
					out = append(out, db.NewDelivery{Channel: c.Name(), Target: t.ID, NotBefore: nb})
				}
			}
			return out, nil
		})
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("notifications: planning failed; retrying on the next sweep", "err", err)
			}
			return
		}
		if n < 100 {
			return
		}
	}
}

// Deciders are the people told of event ev about an item: exactly those
// who may decide it, by the one rule every screen uses
// (db.DecidersOf); an event about no item goes to its owner.
func Deciders(ctx context.Context, store *db.DB, ev db.NotificationEvent) ([]string, error) {
	if ev.ApprovalID != nil && *ev.ApprovalID != "" {
		if b := batchOf(ctx); b != nil {
			if list, ok := b.deciders[*ev.ApprovalID]; ok {
				return list, nil
			}
		}
		return store.DecidersOf(ctx, *ev.ApprovalID)
	}
	if ev.Owner == "" {
		return nil, nil
	}
	return []string{ev.Owner}, nil
}

// Link is the page of item id: every notification leads there, into the
// signed-in app, never to a one-click decision.
func Link(base *url.URL, id string) string {
	return base.String() + "/approvals/" + url.PathEscape(id)
}
