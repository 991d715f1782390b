package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/notify"
)

// startPush runs a pipeline with the push channel, trusting the test push
// service's certificate, with the VAPID contact "ops@example.com".
func (f *fixture) startPush(t *testing.T, d *device, configured *db.VAPIDKeys) *instance {
	t.Helper()
	return f.start(t, notify.Options{}, func(s *db.DB) []notify.Channel {
		return []notify.Channel{notify.NewPush(s, notify.NewVAPID(s, configured), "ops@example.com", f.base, f.clock.Now,
			notify.PushOptions{AllowPrivateEndpoints: true, Client: d.srv.Client()})}
	})
}

func (f *fixture) subscribe(t *testing.T, d *device, path string) db.PushSubscription {
	t.Helper()
	s, err := f.store.SavePushSubscription(context.Background(), d.subscription(f.user.Subject, path))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A new item reaches the person's device: VAPID-signed, encrypted for the
// device, with the names, the expiry and the link, and nothing of the
// arguments or the stated reason.
func TestPushDelivered(t *testing.T) {
	f := newFixture(t)
	d := newDevice(t)
	sub := f.subscribe(t, d, "/push/device-1")
	f.startPush(t, d, nil)
	res, err := f.check("send_email", `{"to":"qv-secret-recipient@example.org","body":"xylophone-7741"}`, "forward zebra-5512 to the team")
	if err != nil || res.Approval == nil {
		t.Fatal(err)
	}
	r := d.next(t)
	if r.Path != "/push/device-1" {
		t.Fatalf("pushed to %q", r.Path)
	}
	keys, err := f.store.EnsureVAPIDKeys(context.Background(), func() (db.VAPIDKeys, error) {
		t.Fatal("the keys were not stored by the sender")
		return db.VAPIDKeys{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkVAPID(t, r.Header.Get("Authorization"), origin(d.srv.URL), keys.PublicKey, "mailto:ops@example.com")
	if ce := r.Header.Get("Content-Encoding"); ce != "aes128gcm" {
		t.Fatalf("Content-Encoding %q", ce)
	}
	if u := r.Header.Get("Urgency"); u != "high" {
		t.Fatalf("Urgency %q", u)
	}
	remaining := res.Approval.ExpiresAt.Sub(f.clock.Now()).Seconds()
	if ttl, err := strconv.Atoi(r.Header.Get("TTL")); err != nil || ttl <= 0 || float64(ttl) > remaining+1 || float64(ttl) < remaining-60 {
		t.Fatalf("TTL %q, want the item's remaining %.0f s", r.Header.Get("TTL"), remaining)
	}
	for _, secret := range []string{"qv-secret-recipient", "xylophone-7741", "zebra-5512"} {
		if strings.Contains(string(r.Body), secret) {
			t.Fatal("the encrypted body carries a secret in clear")
		}
	}
	plain := d.decrypt(t, r.Body)
	for _, secret := range []string{"qv-secret-recipient", "xylophone-7741", "zebra-5512"} {
		if strings.Contains(string(plain), secret) {
			t.Fatalf("the push carries %q: %s", secret, plain)
		}
	}
	var p notify.PushPayload
	if err := json.Unmarshal(plain, &p); err != nil {
		t.Fatalf("payload %s: %v", plain, err)
	}
	want := notify.PushPayload{Title: "Approval needed: Send email", Tool: "Send email", Connector: "Mail", AgentKey: "nightly agent",
		ExpiresAt: res.Approval.ExpiresAt.UTC().Truncate(time.Microsecond), URL: "https://countersign.example/approvals/" + res.Approval.ID,
		Tag: "countersign-" + res.Approval.ID}
	p.ExpiresAt = p.ExpiresAt.Truncate(time.Microsecond)
	if p != want {
		t.Fatalf("payload\n got %+v\nwant %+v", p, want)
	}
	waitFor(t, "the device's last success", func() bool {
		s, err := f.store.PushSubscription(context.Background(), sub.ID)
		return err == nil && s.LastSuccessAt != nil
	})
}

// A device the push service reports gone (410 or 404) is dropped and the
// delivery is not retried; another failure is retried and keeps it.
func TestPushGoneDropsSubscription(t *testing.T) {
	for _, code := range []int{http.StatusGone, http.StatusNotFound} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			f := newFixture(t)
			d := newDevice(t)
			d.status.Store(int32(code))
			sub := f.subscribe(t, d, "/push/gone")
			f.startPush(t, d, nil)
			f.pending(t, "send_email", `{}`)
			d.next(t)
			waitFor(t, "the delivery to fail for good", func() bool {
				return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE channel = 'push' AND state = 'failed'`) == 1
			})
			if _, err := f.store.PushSubscription(context.Background(), sub.ID); approval.KindOf(err) != approval.KindNotFound {
				t.Fatalf("the gone device is still there: %v", err)
			}
			if n := f.count(t, `SELECT attempts FROM notification_deliveries WHERE channel = 'push'`); n != 1 {
				t.Fatalf("%d attempts", n)
			}
		})
	}
	t.Run("500Retried", func(t *testing.T) {
		f := newFixture(t)
		d := newDevice(t)
		d.status.Store(http.StatusInternalServerError)
		sub := f.subscribe(t, d, "/push/flaky")
		inst := f.startPush(t, d, nil)
		f.pending(t, "send_email", `{}`)
		d.next(t)
		waitFor(t, "a retry to be planned", func() bool {
			return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE channel = 'push' AND state = 'pending'
				AND lease_until IS NULL AND attempts = 1`) == 1
		})
		if _, err := f.store.PushSubscription(context.Background(), sub.ID); err != nil {
			t.Fatalf("a failing device was dropped: %v", err)
		}
		d.status.Store(http.StatusCreated)
		f.clock.Advance(time.Minute)
		inst.P.Kick()
		d.next(t)
		waitFor(t, "the retry to succeed", func() bool {
			return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE channel = 'push' AND state = 'sent'`) == 1
		})
	})
}

// Each device of the owner gets one push; another person's device none.
// Hidden characters in names arrive as visible markers.
func TestPushPerDeviceAndVisibleNames(t *testing.T) {
	f := newFixture(t)
	f.addTool(t, "wire", "Pay\u202eout")
	d := newDevice(t)
	f.subscribe(t, d, "/push/phone")
	f.subscribe(t, d, "/push/laptop")
	other := d.subscription("someone-else", "/push/other")
	if _, err := f.store.SavePushSubscription(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	f.startPush(t, d, nil)
	f.pending(t, "wire", `{}`)
	paths := map[string]bool{}
	for range 2 {
		r := d.next(t)
		paths[r.Path] = true
		var p notify.PushPayload
		if err := json.Unmarshal(d.decrypt(t, r.Body), &p); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsRune(p.Tool, '\u202e') || p.Tool != approval.Visible("Pay\u202eout", approval.SingleLine).String() {
			t.Fatalf("tool %q", p.Tool)
		}
	}
	if !paths["/push/phone"] || !paths["/push/laptop"] {
		t.Fatalf("pushed to %v", paths)
	}
	waitFor(t, "both deliveries", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE channel = 'push' AND state = 'sent'`) == 2
	})
	select {
	case r := <-d.got:
		t.Fatalf("an extra push to %s", r.Path)
	default:
	}
}

// Configured keys are used as given: nothing is stored.
func TestPushConfiguredKeys(t *testing.T) {
	f := newFixture(t)
	d := newDevice(t)
	f.subscribe(t, d, "/push/x")
	keys, err := notify.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	f.startPush(t, d, &keys)
	f.pending(t, "send_email", `{}`)
	r := d.next(t)
	checkVAPID(t, r.Header.Get("Authorization"), origin(d.srv.URL), keys.PublicKey, "mailto:ops@example.com")
	if n := f.count(t, `SELECT count(*) FROM vapid_keys`); n != 0 {
		t.Fatalf("%d stored key pairs", n)
	}
}

// Two instances starting at once on an empty database end up with one
// key pair, the same for both. Both find no pair and generate one before
// either stores it (the generators wait for each other), so the race is
// run every time.
func TestVAPIDKeysCreatedOnce(t *testing.T) {
	f := newFixture(t)
	var wg, generating sync.WaitGroup
	generating.Add(2)
	got := make([]db.VAPIDKeys, 2)
	errs := make([]error, 2)
	for i := range 2 {
		store, err := db.Open(context.Background(), f.url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(store.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = store.EnsureVAPIDKeys(context.Background(), func() (db.VAPIDKeys, error) {
				generating.Done()
				generating.Wait()
				return notify.GenerateVAPIDKeys()
			})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got[0] != got[1] || got[0].PublicKey == "" {
		t.Fatalf("two key pairs: %+v", got)
	}
	if n := f.count(t, `SELECT count(*) FROM vapid_keys`); n != 1 {
		t.Fatalf("%d stored key pairs", n)
	}
	if _, err := notify.ParseVAPIDKeys(got[0].PublicKey, got[0].PrivateKey); err != nil {
		t.Fatalf("the stored pair is not a pair: %v", err)
	}
	// A later start (another instance's VAPID) reads the same pair.
	k, err := notify.NewVAPID(f.store, nil).Keys(context.Background())
	if err != nil || k != got[0] {
		t.Fatalf("a later instance: %+v %v", k, err)
	}
}

func TestParseVAPIDKeys(t *testing.T) {
	a, _ := notify.GenerateVAPIDKeys()
	b, _ := notify.GenerateVAPIDKeys()
	if k, err := notify.ParseVAPIDKeys(a.PublicKey+"=", a.PrivateKey); err != nil || k != a {
		t.Fatalf("OK: %+v %v", k, err)
	}
	for _, tc := range []struct {
		pub, priv string
		want      error
	}{
		{"not base64!", a.PrivateKey, notify.ErrVAPIDPublic},
		{a.PrivateKey, a.PrivateKey, notify.ErrVAPIDPublic},
		{a.PublicKey, a.PublicKey, notify.ErrVAPIDPrivate},
		{a.PublicKey, "", notify.ErrVAPIDPrivate},
		{a.PublicKey, b.PrivateKey, notify.ErrVAPIDMismatch},
	} {
		if _, err := notify.ParseVAPIDKeys(tc.pub, tc.priv); err != tc.want {
			t.Fatalf("%.10s/%.10s: %v, want %v", tc.pub, tc.priv, err, tc.want)
		}
	}
}

// A batch of new items planned together (its deciders and their devices
// read once for the batch) still pushes each item to the devices of the
// people who may decide it, and to no one else's: three items of one
// person and two of another, written before the pipeline starts so that
// one batch holds them, and a third person's device that nothing is for.
func TestPushBatchGoesToEachItemsDeciders(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, s := range []string{"sam", "lee"} {
		if _, err := f.store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: s, Email: s + "@example.com", EmailVerified: true}); err != nil {
			t.Fatal(err)
		}
	}
	d := newDevice(t)
	for _, dev := range [][2]string{{"maya", "/push/maya-phone"}, {"maya", "/push/maya-laptop"}, {"sam", "/push/sam-phone"}, {"lee", "/push/lee-phone"}} {
		if _, err := f.store.SavePushSubscription(ctx, d.subscription(dev[0], dev[1])); err != nil {
			t.Fatal(err)
		}
	}
	for i, owner := range []string{"maya", "sam", "maya", "sam", "maya"} {
		req := db.CheckRequest{CallID: fmt.Sprint("batch-", i), User: owner, ConversationID: "conv", TurnID: "turn",
			Connector: "mail", Tool: "send_email", Arguments: fmt.Sprintf(`{"n":%d}`, i)}
		if res, err := f.store.Check(ctx, f.key, req, db.CheckOptions{Timeout: 10 * time.Minute, DeniedThreshold: 2}); err != nil || res.Approval == nil {
			t.Fatalf("check: %v %+v", err, res.Outcome)
		}
	}
	f.startPush(t, d, nil)
	waitFor(t, "every event planned", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_events WHERE planned_at IS NULL`) == 0
	})
	if n := f.count(t, `SELECT count(*) FROM notification_deliveries WHERE channel = 'push'`); n != 3*2+2 {
		t.Fatalf("%d push deliveries, want 8 (three items to maya's two devices, two to sam's one)", n)
	}
	if n := f.count(t, `SELECT count(*) FROM notification_deliveries nd
		JOIN notification_events e ON e.id = nd.event_id JOIN approvals a ON a.id = e.approval_id
		JOIN push_subscriptions s ON s.id::text = nd.target
		WHERE nd.channel = 'push' AND s.user_subject = a.owner_subject`); n != 8 {
		t.Fatalf("%d of 8 push deliveries go to a device of the item's owner", n)
	}
	for range 8 {
		if r := d.next(t); strings.HasPrefix(r.Path, "/push/lee") {
			t.Fatalf("pushed to %s, who may decide none of the items", r.Path)
		}
	}
}
