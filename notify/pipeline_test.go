package notify_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/notify"
)

// A delivery that an instance claimed but could not finish (it stopped
// mid-send) is sent by the next instance once its lease runs out.
func TestDeliverySurvivesRestart(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	var calls atomic.Int32
	rc.setAnswer(func(_ hit, r *http.Request) int {
		if calls.Add(1) == 1 {
			<-r.Context().Done() // hangs until the sender goes away
		}
		return http.StatusOK
	})
	f.webhook(t, rc.URL, db.EventApprovalRequested)
	a := f.start(t, notify.Options{}, f.webhooks(notify.Options{}))
	item := f.pending(t, "send_email", `{}`)
	h := rc.next(t)
	a.stop() // the process goes away mid-send

	if n := f.count(t, `SELECT count(*) FROM notification_deliveries WHERE state = 'pending'`); n != 1 {
		t.Fatalf("want the delivery still pending after the stop, got %d", n)
	}
	f.clock.Advance(3 * time.Minute) // past the lease
	f.start(t, notify.Options{}, f.webhooks(notify.Options{}))
	h2 := rc.next(t)
	if h2.Payload.DeliveryID != h.Payload.DeliveryID || h2.Payload.ApprovalID != item.ID {
		t.Fatalf("after the restart got %+v, want delivery %d", h2.Payload, h.Payload.DeliveryID)
	}
	waitFor(t, "the delivery to be sent", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE state = 'sent'`) == 1
	})
}

// An event committed while no pipeline runs is delivered when one starts.
func TestOutboxWaitsForAPipeline(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	f.webhook(t, rc.URL, db.EventApprovalRequested)
	item := f.pending(t, "send_email", `{}`)
	f.start(t, notify.Options{}, f.webhooks(notify.Options{}))
	if h := rc.next(t); h.Payload.ApprovalID != item.ID {
		t.Fatalf("got %+v", h.Payload)
	}
}

// A check whose transaction fails after the outbox insert (here: its audit
// line is refused) leaves no event, and nothing is sent for it.
func TestNothingSentForRolledBackItem(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.addTool(t, "boom", "Boom")
	if _, err := f.store.Pool.Exec(ctx, `
		CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.tool = 'boom' AND NEW.action = 'approval requested' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_boom BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_boom();`); err != nil {
		t.Fatal(err)
	}
	rc := newReceiver(t)
	f.webhook(t, rc.URL, db.EventApprovalRequested)
	f.start(t, notify.Options{}, f.webhooks(notify.Options{}))

	if _, err := f.check("boom", `{}`, ""); err == nil {
		t.Fatal("the check should have failed")
	}
	if n := f.count(t, `SELECT count(*) FROM notification_events WHERE kind = $1`, db.EventApprovalRequested); n != 0 {
		t.Fatalf("a rolled-back item left %d event(s) in the outbox", n)
	}
	// A later item goes out, and it is the only thing that does.
	item := f.pending(t, "send_email", `{}`)
	if h := rc.next(t); h.Payload.ApprovalID != item.ID || h.Payload.Tool != "send_email" {
		t.Fatalf("got %+v", h.Payload)
	}
	waitFor(t, "the delivery to be sent", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE state = 'sent'`) == 1
	})
	select {
	case h := <-rc.C:
		t.Fatalf("unexpected delivery %+v", h.Payload)
	default:
	}
}

// Two instances on one database send each notification once.
func TestTwoInstancesDeliverOnce(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	f.webhook(t, rc.URL, db.EventApprovalRequested)
	f.webhook(t, rc.URL+"/second", db.EventApprovalRequested)
	f.start(t, notify.Options{}, f.webhooks(notify.Options{}))
	f.start(t, notify.Options{}, f.webhooks(notify.Options{}))
	const items = 12
	for range items {
		f.pending(t, "send_email", `{}`)
	}
	seen := map[int64]int{}
	for range 2 * items {
		seen[rc.next(t).Payload.DeliveryID]++
	}
	waitFor(t, "every delivery to be sent", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE state = 'sent'`) == 2*items
	})
	if len(seen) != 2*items {
		t.Fatalf("want %d distinct deliveries, got %d", 2*items, len(seen))
	}
	select {
	case h := <-rc.C:
		t.Fatalf("delivery %d was sent twice", h.Payload.DeliveryID)
	default:
	}
	if n := f.count(t, `SELECT count(*) FROM notification_attempts`); n != 2*items {
		t.Fatalf("want %d attempts, got %d", 2*items, n)
	}
}

// A receiver that does not answer never delays a check or a decision:
// both complete while the receiver still holds the first post.
func TestSlowReceiverDoesNotDelayDecisions(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	rc.setAnswer(func(_ hit, r *http.Request) int {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return http.StatusOK
	})
	f.webhook(t, rc.URL, db.EventApprovalRequested, db.EventApprovalDecided)
	f.start(t, notify.Options{}, f.webhooks(notify.Options{}))
	a := f.pending(t, "send_email", `{}`)
	rc.next(t) // the receiver now holds the post of approval.requested

	b := f.pending(t, "send_email", `{"n":2}`)
	if _, err := f.store.Decide(context.Background(), a.ID, f.user, approval.Approve, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Decide(context.Background(), b.ID, f.user, approval.Reject, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-release:
		t.Fatal("the receiver was released before the decisions returned")
	default:
	}
	if n := f.count(t, `SELECT count(*) FROM notification_deliveries WHERE state = 'sent'`); n != 0 {
		t.Fatalf("nothing can be sent yet, got %d", n)
	}
}

// Every kind of change is written to the outbox by its own transaction:
// a request, a decision, an expiry, a stopped turn, a lapsed pre-approval
// and a policy change.
func TestEventsOfEveryKind(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	def := approval.Definition{Name: "Report", Steps: []approval.Step{{ID: "s", Title: "S", WorkType: approval.WorkType{ID: "w", Version: "1"},
		Tools: []approval.Pair{{Connector: "mail", Tool: "send_email"}}}}}
	pb, err := f.store.UpsertPlaybook(ctx, approval.SystemActor, "pb", f.user.Subject, def)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.PreApprove(ctx, f.user, "pb", pb.Fingerprint); err != nil || n != 1 {
		t.Fatalf("pre-approve: %d %v", n, err)
	}
	if _, err := f.store.Pool.Exec(ctx, `DELETE FROM notification_events`); err != nil {
		t.Fatal(err)
	}
	decided := f.pending(t, "send_email", `{"n":1}`)
	if _, err := f.store.Decide(ctx, decided.ID, f.user, approval.Approve, ""); err != nil {
		t.Fatal(err)
	}
	expired := f.pending(t, "send_email", `{"n":2}`)
	if _, err := f.store.Pool.Exec(ctx, `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, expired.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.ExpireDue(ctx, 10); err != nil || n != 1 {
		t.Fatalf("expire: %d %v", n, err)
	}
	cancelled := f.pending(t, "send_email", `{"n":3}`)
	if _, err := f.store.CancelTurn(ctx, f.key, f.user.Subject, "conv", "turn"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email",
		approval.Policy{Mode: approval.ModeRequireApproval}); err != nil {
		t.Fatal(err)
	}
	rows, err := f.store.Pool.Query(ctx, `SELECT kind || ' ' || COALESCE(approval_id::text, playbook_id) FROM notification_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var k string
		_ = rows.Scan(&k)
		got = append(got, k)
	}
	want := []string{
		db.EventApprovalRequested + " " + decided.ID, db.EventApprovalDecided + " " + decided.ID,
		db.EventApprovalRequested + " " + expired.ID, db.EventApprovalExpired + " " + expired.ID,
		db.EventApprovalRequested + " " + cancelled.ID, db.EventApprovalCancelled + " " + cancelled.ID,
		// a stopped turn also ends its approved items not claimed yet
		db.EventApprovalCancelled + " " + decided.ID,
		db.EventPreapprovalLapsed + " pb", db.EventPolicyChanged + " ",
	}
	slices.Sort(got)
	slices.Sort(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Finished deliveries are removed after Keep; pending ones stay.
func TestPruneFinishedDeliveries(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	f.webhook(t, rc.URL, db.EventApprovalRequested)
	in := f.start(t, notify.Options{}, f.webhooks(notify.Options{}))
	f.pending(t, "send_email", `{}`)
	rc.next(t)
	waitFor(t, "the delivery to be sent", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE state = 'sent'`) == 1
	})
	in.stop()
	n, err := f.store.PruneNotifications(context.Background(), f.clock.Now().Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	if c := f.count(t, `SELECT count(*) FROM notification_attempts`) + f.count(t, `SELECT count(*) FROM notification_events WHERE kind = $1`, db.EventApprovalRequested); c != 0 {
		t.Fatalf("%d rows left", c)
	}
}
