package db_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

// Instances planning the outbox at the same time share it: every event is
// planned once, with its deliveries, and a batch whose planning fails is
// left for the next planner whole.
func TestPlanEventsOnceAcrossPlanners(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	const events = 1200
	if _, err := store.Pool.Exec(ctx, `INSERT INTO notification_events (kind, owner_subject, connector, tool, detail)
		SELECT $1, 'owner-' || (g % 7), 'mail', 'send_email', '{}' FROM generate_series(1, $2) g`,
		db.EventApprovalRequested, events); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	planned := map[int64]int{}
	failed := errors.New("planning failed")
	var wg sync.WaitGroup
	for w := range 5 {
		wg.Go(func() {
			for i := 0; ; i++ {
				var batch []int64
				n, err := store.PlanEvents(ctx, 100, time.Now(), func(ev db.NotificationEvent) ([]db.NewDelivery, error) {
					if w == 0 && i%2 == 0 {
						return nil, failed // every other batch of this planner fails
					}
					batch = append(batch, ev.ID)
					return []db.NewDelivery{{Channel: "webhook", Target: fmt.Sprint(ev.Owner, "/", ev.ID)}}, nil
				})
				switch {
				case errors.Is(err, failed):
					continue
				case err != nil:
					t.Error(err)
					return
				case n == 0:
					return
				}
				mu.Lock()
				for _, id := range batch {
					planned[id]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for id, n := range planned {
		if n != 1 {
			t.Fatalf("event %d planned %d times", id, n)
		}
	}
	var left, deliveries, own int
	if err := store.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM notification_events WHERE planned_at IS NULL),
		(SELECT count(*) FROM notification_deliveries),
		(SELECT count(*) FROM notification_deliveries d JOIN notification_events e ON e.id = d.event_id
			WHERE d.target = e.owner_subject || '/' || e.id)`).Scan(&left, &deliveries, &own); err != nil {
		t.Fatal(err)
	}
	if len(planned) != events || left != 0 || deliveries != events || own != events {
		t.Fatalf("%d events planned, %d left unplanned, %d deliveries (%d to their own event's target); want %d, 0, %d, %d",
			len(planned), left, deliveries, own, events, events, events)
	}
}
