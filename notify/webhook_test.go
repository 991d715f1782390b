package notify_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/notify"
	"github.com/jackc/pgx/v5"
)

const secret = "a-webhook-secret-of-some-length"

// hit is one request the receiver got.
type hit struct {
	Body      []byte
	Signature string
	Payload   notify.Payload
}

// receiver is an httptest server whose answers the test chooses.
type receiver struct {
	*httptest.Server
	C      chan hit
	mu     sync.Mutex
	answer func(h hit, r *http.Request) int
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{C: make(chan hit, 100), answer: func(hit, *http.Request) int { return http.StatusOK }}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h := hit{Body: b, Signature: r.Header.Get(notify.SignatureHeader)}
		_ = json.Unmarshal(b, &h.Payload)
		rc.C <- h
		rc.mu.Lock()
		answer := rc.answer
		rc.mu.Unlock()
		w.WriteHeader(answer(h, r))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) setAnswer(f func(hit, *http.Request) int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answer = f
}

func (rc *receiver) next(t *testing.T) hit {
	t.Helper()
	select {
	case h := <-rc.C:
		return h
	case <-time.After(15 * time.Second):
		t.Fatal("the receiver got nothing")
	}
	return hit{}
}

// verify checks a signature as the docs tell receivers to.
func verify(t *testing.T, sig string, body []byte, now time.Time) bool {
	t.Helper()
	var ts, v1 string
	for _, part := range strings.Split(sig, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + string(body)))
	want := hex.EncodeToString(m.Sum(nil))
	return hmac.Equal([]byte(want), []byte(v1))
}

func (f *fixture) webhook(t *testing.T, url string, events ...string) db.Webhook {
	t.Helper()
	w, err := f.store.CreateWebhook(context.Background(), db.WebhookInput{URL: url, Secret: secret, Events: events}, f.user)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (f *fixture) webhooks(opt notify.Options) func(*db.DB) []notify.Channel {
	return func(s *db.DB) []notify.Channel {
		now := opt.Now
		if now == nil {
			now = f.clock.Now
		}
		return []notify.Channel{notify.NewWebhooks(s, f.base, now)}
	}
}

func TestWebhookSignedPayload(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	f.webhook(t, rc.URL, db.EventApprovalRequested, db.EventApprovalDecided)
	f.start(t, notify.Options{}, f.webhooks(notify.Options{}))
	a := f.pending(t, "send_email", `{"to":"qv-secret-recipient@example.org","body":"xylophone-7741"}`)

	h := rc.next(t)
	if !verify(t, h.Signature, h.Body, f.clock.Now()) {
		t.Fatalf("signature %q does not verify", h.Signature)
	}
	if verify(t, h.Signature, append([]byte(" "), h.Body...), f.clock.Now()) {
		t.Fatal("a changed body must not verify")
	}
	p := h.Payload
	if p.Event != db.EventApprovalRequested || p.ApprovalID != a.ID || p.Tool != "send_email" || p.Connector != "mail" ||
		p.Owner != "maya" || p.Link != "https://countersign.example/approvals/"+a.ID || p.AgentKey != "nightly agent" {
		t.Fatalf("payload %+v", p)
	}
	if !strings.Contains(p.Text, "Send email") || !strings.Contains(p.Text, p.Link) {
		t.Fatalf("text line %q", p.Text)
	}
	for _, v := range []string{"qv-secret-recipient", "xylophone-7741"} {
		if strings.Contains(string(h.Body), v) {
			t.Fatalf("the body carries argument value %q: %s", v, h.Body)
		}
	}
	if _, err := f.store.Decide(context.Background(), a.ID, f.user, approval.Reject, "because qv-secret-recipient"); err != nil {
		t.Fatal(err)
	}
	h = rc.next(t)
	if h.Payload.Event != db.EventApprovalDecided || h.Payload.Status != "rejected" || strings.Contains(string(h.Body), "qv-secret") {
		t.Fatalf("decided payload: %s", h.Body)
	}
}

func TestWebhookRetriesAfter500(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	var calls atomic.Int32
	rc.setAnswer(func(hit, *http.Request) int {
		if calls.Add(1) <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	f.webhook(t, rc.URL, db.EventApprovalRequested)
	opt := notify.Options{Backoff: func(int) time.Duration { return time.Minute }}
	in := f.start(t, opt, f.webhooks(opt))
	f.pending(t, "send_email", `{}`)

	first := rc.next(t)
	waitFor(t, "the failed attempt to be recorded", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_attempts WHERE status_code = 500`) == 1
	})
	// Not retried before the backoff has passed on the pipeline's clock.
	in.P.Kick()
	if n := f.count(t, `SELECT count(*) FROM notification_deliveries WHERE state = 'pending' AND next_attempt_at > $1`, f.clock.Now()); n != 1 {
		t.Fatalf("want the delivery waiting for its retry, got %d", n)
	}
	for i := 0; i < 2; i++ {
		waitFor(t, "the attempt to be recorded", func() bool {
			return f.count(t, `SELECT count(*) FROM notification_attempts`) == i+1
		})
		f.clock.Advance(time.Minute)
		in.P.Kick()
		h := rc.next(t)
		if h.Payload.DeliveryID != first.Payload.DeliveryID {
			t.Fatalf("retry %d is delivery %d, want %d", i, h.Payload.DeliveryID, first.Payload.DeliveryID)
		}
	}
	waitFor(t, "the delivery to be sent", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE state = 'sent'`) == 1
	})
	if n := f.count(t, `SELECT count(*) FROM notification_attempts`); n != 3 {
		t.Fatalf("want 3 attempts (500, 500, 200), got %d", n)
	}
}

func TestWebhookGivesUpAfter24Hours(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	rc.setAnswer(func(hit, *http.Request) int { return http.StatusBadGateway })
	f.webhook(t, rc.URL, db.EventApprovalRequested)
	opt := notify.Options{Backoff: func(int) time.Duration { return time.Hour }}
	in := f.start(t, opt, f.webhooks(opt))
	f.pending(t, "send_email", `{}`)
	rc.next(t)
	waitFor(t, "the attempt to be recorded", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_attempts`) == 1
	})
	f.clock.Advance(25 * time.Hour)
	in.P.Kick()
	rc.next(t)
	waitFor(t, "the delivery to fail for good", func() bool {
		return f.count(t, `SELECT count(*) FROM notification_deliveries WHERE state = 'failed'`) == 1
	})
}

// Each signed checkpoint of the audit chain goes, signed as a webhook too,
// to the endpoints subscribed to audit.checkpoint, and only to them; the
// receiver can verify the checkpoint with the audit key's public half.
func TestWebhookAuditCheckpoint(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rc, other := newReceiver(t), newReceiver(t)
	f.webhook(t, rc.URL, db.EventAuditCheckpoint)
	f.webhook(t, other.URL, db.EventApprovalRequested, db.EventApprovalDecided)
	signer, pub, _ := testenv.AuditSigner(t)
	f.start(t, notify.Options{}, f.webhooks(notify.Options{}))
	sealer := &db.Sealer{DB: f.store, Signer: signer, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	// Everything committed is sealed first: a sealer seals only below the
	// oldest open transaction, and a line left behind would move the head
	// later in the test.
	if err := f.store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	_, cp, err := sealer.SealOnce(ctx, true)
	if err != nil || cp == nil {
		t.Fatalf("checkpoint: %v %v", cp, err)
	}
	h := rc.next(t)
	if !verify(t, h.Signature, h.Body, f.clock.Now()) {
		t.Fatalf("signature %q does not verify", h.Signature)
	}
	p := h.Payload
	if p.Event != db.EventAuditCheckpoint || p.Checkpoint == nil || *p.Checkpoint != *cp ||
		p.Link != "https://countersign.example/admin/audit/verify" || !strings.Contains(p.Text, cp.Hash) {
		t.Fatalf("payload %s, checkpoint %+v", h.Body, cp)
	}
	if !p.Checkpoint.Verify(pub) {
		t.Fatal("the checkpoint received does not verify with the public key")
	}
	forged := *p.Checkpoint
	forged.Seq++
	if forged.Verify(pub) {
		t.Fatal("a changed checkpoint verifies")
	}
	// With the last checkpoint two minutes old, a head that did not move is
	// not signed again, one that moved is; an unmoved head is signed again
	// once an hour.
	backdate := func(by string) {
		t.Helper()
		testenv.AsAuditAdmin(t, f.store, `UPDATE audit_checkpoints SET signed_at = signed_at - interval '`+by+`'`)
	}
	sealOnce := func() *db.Checkpoint {
		t.Helper()
		for {
			n, cp, err := sealer.SealOnce(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			if n >= 0 {
				return cp
			}
			time.Sleep(10 * time.Millisecond) // another sealer holds the lock
		}
	}
	backdate("2 minutes")
	if again := sealOnce(); again != nil {
		t.Fatalf("signed again with nothing new: %+v", again)
	}
	if err := f.store.InTx(ctx, func(tx pgx.Tx) error {
		return db.RecordAudit(ctx, tx, approval.AuditEvent{Actor: approval.SystemActor, Action: approval.ActionExpired})
	}); err != nil {
		t.Fatal(err)
	}
	// Sealed first (a sealer seals only below the oldest open transaction,
	// which another connection may hold a moment): the head has moved.
	if err := f.store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	moved := sealOnce()
	if moved == nil || moved.Seq != cp.Seq+1 {
		t.Fatalf("the head moved and was not signed: %+v", moved)
	}
	if h := rc.next(t); h.Payload.Checkpoint == nil || *h.Payload.Checkpoint != *moved {
		t.Fatalf("second checkpoint: %s", h.Body)
	}
	backdate("61 minutes")
	if idle := sealOnce(); idle == nil || idle.Seq != moved.Seq {
		t.Fatalf("an unmoved head was not signed again after an hour: %+v", idle)
	}
	select {
	case h := <-other.C:
		t.Fatalf("an endpoint not subscribed to checkpoints got %s", h.Body)
	case <-time.After(300 * time.Millisecond):
	}
}
