package notify

import (
	"context"
	"sync"
	"time"

	"github.com/countersign/countersign/db"
)

// work sends channel c's due deliveries whenever woken.
func (p *Pipeline) work(ctx context.Context, c Channel) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.workers[c.Name()]:
		}
		for ctx.Err() == nil && p.deliver(ctx, c) > 0 {
		}
	}
}

// deliver claims a batch of c's due deliveries and sends them, up to
// Parallel at a time; it returns how many it claimed.
func (p *Pipeline) deliver(ctx context.Context, c Channel) int {
	list, err := p.db.ClaimDeliveries(ctx, c.Name(), p.opt.Now(), p.opt.Lease, 50)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("notifications: claim failed", "channel", c.Name(), "err", err)
		}
		return 0
	}
	groups := [][]db.Delivery{}
	if g, ok := c.(Grouped); ok && g.GroupByTarget() {
		at := map[string]int{}
		for _, d := range list {
			i, ok := at[d.Target]
			if !ok {
				i = len(groups)
				at[d.Target] = i
				groups = append(groups, nil)
			}
			groups[i] = append(groups[i], d)
		}
	} else {
		for _, d := range list {
			groups = append(groups, []db.Delivery{d})
		}
	}
	sem := make(chan struct{}, p.opt.Parallel)
	var wg sync.WaitGroup
	for _, g := range groups {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p.send(ctx, c, g)
		}()
	}
	wg.Wait()
	return len(list)
}

func (p *Pipeline) send(ctx context.Context, c Channel, g []db.Delivery) {
	res := c.Send(ctx, g[0].Target, g)
	if ctx.Err() != nil {
		return // shutting down: the lease runs out and another instance retries
	}
	now := p.opt.Now()
	a := db.Attempt{At: now, StatusCode: res.StatusCode, Outcome: "sent"}
	switch {
	case res.Skipped:
		a.Outcome = "skipped"
	case res.Err != nil:
		a.Outcome = res.Err.Error()
		p.log.Info("notifications: delivery failed", "channel", c.Name(), "target", g[0].Target, "err", res.Err)
	}
	for _, d := range g {
		var retry *time.Time
		if res.Err != nil && !res.Permanent && now.Sub(d.CreatedAt) < p.opt.GiveUpAfter {
			t := now.Add(p.opt.Backoff(d.Attempts))
			retry = &t
		}
		if err := p.db.FinishAttempt(ctx, d.ID, a, res.Err == nil, retry); err != nil {
			p.log.Warn("notifications: could not record an attempt", "err", err)
		}
	}
}
