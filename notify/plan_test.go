package notify_test

import (
	"context"
	"sync"
	"testing"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/notify"
)

// targetsByOwner is a channel whose targets are the event's owner and
// kind; it counts how often it is asked.
type targetsByOwner struct {
	name string
	mu   sync.Mutex
	asks int
}

func (c *targetsByOwner) Name() string { return c.name }

func (c *targetsByOwner) Targets(_ context.Context, ev db.NotificationEvent) ([]notify.Target, error) {
	c.mu.Lock()
	c.asks++
	c.mu.Unlock()
	return []notify.Target{{ID: ev.Owner + " " + ev.Kind}}, nil
}

func (c *targetsByOwner) Send(context.Context, string, []db.Delivery) notify.Result {
	return notify.Result{}
}

func (c *targetsByOwner) asked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asks
}

// sameForKindAndOwner says its targets depend only on kind and owner.
type sameForKindAndOwner struct{ targetsByOwner }

func (*sameForKindAndOwner) TargetsDependOnKindAndOwnerOnly() {}

// Planning a batch of events asks a channel whose targets depend only on
// kind and owner once per pair, and every other channel once per event;
// either way each event gets the deliveries of its own owner and kind.
func TestPlanAsksOncePerKindAndOwner(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.store.Pool.Exec(ctx, `DELETE FROM notification_events`); err != nil {
		t.Fatal(err)
	}
	// 90 events: three owners, two kinds, interleaved, written before the
	// pipeline starts so that its first batch holds them all.
	if _, err := f.store.Pool.Exec(ctx, `INSERT INTO notification_events (kind, owner_subject, connector, tool, detail)
		SELECT CASE WHEN g % 2 = 0 THEN $1 ELSE $2 END, 'owner-' || (g % 3), 'mail', 'send_email', '{}'
		FROM generate_series(1, 90) g`, db.EventApprovalRequested, db.EventApprovalDecided); err != nil {
		t.Fatal(err)
	}
	memo := &sameForKindAndOwner{targetsByOwner{name: "memo"}}
	each := &targetsByOwner{name: "each"}
	f.start(t, notify.Options{}, func(*db.DB) []notify.Channel { return []notify.Channel{memo, each} })
	waitFor(t, "every event planned", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_events WHERE planned_at IS NULL`) == 0
	})
	if n := f.count(t, `SELECT count(*) FROM notification_deliveries d JOIN notification_events e ON e.id = d.event_id
		WHERE d.target = e.owner_subject || ' ' || e.kind`); n != 180 {
		t.Fatalf("%d deliveries to their event's owner and kind, want 180 (90 events, 2 channels)", n)
	}
	if n := f.count(t, `SELECT count(*) FROM notification_deliveries`); n != 180 {
		t.Fatalf("%d deliveries, want 180", n)
	}
	if got := each.asked(); got != 90 {
		t.Fatalf("the per-event channel was asked %d times for 90 events", got)
	}
	if got := memo.asked(); got != 6 {
		t.Fatalf("the kind-and-owner channel was asked %d times for 6 pairs in one batch", got)
	}
}
