package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

// Push sends a Web Push message (RFC 8030, encrypted per RFC 8291, signed
// with VAPID per RFC 8292) to each of a person's devices for each new
// pending item. It connects only to public addresses (see push_guard.go).
type Push struct {
	db           *db.DB
	vapid        *VAPID
	subject      string
	base         *url.URL
	now          func() time.Time
	client       webpush.HTTPClient
	allowPrivate bool
}

// PushOptions adjust the push channel. The zero value is what a server
// runs with.
type PushOptions struct {
	// AllowPrivateEndpoints lets pushes go to loopback and private
	// addresses, through Client. It exists for tests, whose push service
	// runs on 127.0.0.1; it is never set from configuration.
	AllowPrivateEndpoints bool
	// Client replaces the guarded client; used only with
	// AllowPrivateEndpoints, since it bypasses the guard.
	Client *http.Client
}

// NewPush prepares the push channel. subject is the VAPID contact (see
// VAPIDSubject).
func NewPush(store *db.DB, vapid *VAPID, subject string, base *url.URL, now func() time.Time, opt PushOptions) *Push {
	if now == nil {
		now = time.Now
	}
	p := &Push{db: store, vapid: vapid, subject: subject, base: base, now: now, client: guardedPushClient()}
	if opt.AllowPrivateEndpoints {
		p.allowPrivate = true
		if opt.Client != nil {
			p.client = opt.Client
		}
	}
	return p
}

// Name implements Channel.
func (p *Push) Name() string { return "push" }

// Targets implements Channel: every device of each person who may decide
// a new pending item (Deciders), or of an escalated item's backup team
// members. They depend on the item, not only on its kind and owner: a
// team's item goes to the team's members.
func (p *Push) Targets(ctx context.Context, ev db.NotificationEvent) ([]Target, error) {
	people, err := peopleTold(ctx, p.db, ev)
	if err != nil {
		return nil, err
	}
	return targetsOf(people, func(subject string) ([]Target, error) { return p.devices(ctx, subject) })
}

// devices are subject's push devices: from the batch, where the batch
// read them (prepare), or read now.
func (p *Push) devices(ctx context.Context, subject string) ([]Target, error) {
	if b := batchOf(ctx); b != nil {
		if ts, ok := b.devices[subject]; ok {
			return ts, nil
		}
	}
	subs, err := p.db.PushSubscriptionsOf(ctx, subject)
	if err != nil {
		return nil, err
	}
	return deviceTargets(subs), nil
}

// prepare implements preparer: the devices of every person told of a new
// item in evs, in one statement.
func (p *Push) prepare(ctx context.Context, b *batch, evs []db.NotificationEvent) error {
	seen := map[string]bool{}
	var subjects []string
	for _, ev := range evs {
		if !asksDeciders(ev) {
			continue
		}
		for _, s := range b.deciders[*ev.ApprovalID] {
			if !seen[s] {
				seen[s] = true
				subjects = append(subjects, s)
			}
		}
	}
	subs, err := p.db.PushSubscriptionsOfMany(ctx, subjects)
	if err != nil {
		return fmt.Errorf("push targets: %w", err)
	}
	b.devices = make(map[string][]Target, len(subjects))
	for _, s := range subjects {
		b.devices[s] = deviceTargets(subs[s])
	}
	return nil
}

// deviceTargets are the targets of devices subs.
func deviceTargets(subs []db.PushSubscription) []Target {
	out := make([]Target, 0, len(subs))
	for _, s := range subs {
		out = append(out, Target{ID: strconv.FormatInt(s.ID, 10)})
	}
	return out
}

// PushPayload is what a push carries, readable on a lock screen: names
// and the link, never argument values or the agent's stated reason.
type PushPayload struct {
	Title     string    `json:"title"`
	Tool      string    `json:"tool"`
	Connector string    `json:"connector"`
	AgentKey  string    `json:"agent_key"`
	ExpiresAt time.Time `json:"expires_at"`
	URL       string    `json:"url"`
	Tag       string    `json:"tag"` // a second push for the same item replaces the first
}

// ComposePush builds d's payload. Untrusted names show their hidden
// characters as visible markers.
func ComposePush(base *url.URL, d db.Delivery) PushPayload {
	show := func(s string) string { return approval.Visible(s, approval.SingleLine).String() }
	p := PushPayload{Title: "Approval needed: " + show(d.ToolDisplay), Tool: show(d.ToolDisplay),
		Connector: show(d.ConnectorDisplay), AgentKey: show(d.AgentKey), URL: Link(base, d.ApprovalID),
		Tag: "countersign-" + d.ApprovalID}
	if d.ExpiresAt != nil {
		p.ExpiresAt = d.ExpiresAt.UTC()
	}
	return p
}

// Send implements Channel: one push to device target about the item, if
// it still waits. A device the push service reports gone is dropped.
func (p *Push) Send(ctx context.Context, target string, ds []db.Delivery) Result {
	id, err := strconv.ParseInt(target, 10, 64)
	if err != nil {
		return Result{Err: errors.New("invalid device"), Permanent: true}
	}
	sub, err := p.db.PushSubscription(ctx, id)
	if approval.KindOf(err) == approval.KindNotFound {
		return Result{Skipped: true} // removed meanwhile
	} else if err != nil {
		return Result{Err: errors.New("could not read the device")}
	}
	if u, err := url.Parse(sub.Endpoint); err != nil || (!p.allowPrivate && CheckPushEndpoint(u) != nil) {
		// Stored before endpoints were checked: it is never sent to.
		return Result{Err: ErrPrivateEndpoint, Permanent: true}
	}
	d, now := ds[0], p.now()
	if d.Status != string(approval.StatusPending) || d.ExpiresAt == nil || !d.ExpiresAt.After(now) {
		return Result{Skipped: true} // answered or expired before the push went out
	}
	keys, err := p.vapid.Keys(ctx)
	if err != nil {
		return Result{Err: errors.New("could not read the VAPID keys")}
	}
	body, err := json.Marshal(ComposePush(p.base, d))
	if err != nil {
		return Result{Err: err, Permanent: true}
	}
	// The push service keeps the message while the device is offline, but
	// no longer than the item waits: a late push would lead to an answered
	// page.
	ttl := int(math.Ceil(d.ExpiresAt.Sub(now).Seconds()))
	resp, err := webpush.SendNotificationWithContext(ctx, body,
		&webpush.Subscription{Endpoint: sub.Endpoint, Keys: webpush.Keys{Auth: sub.Auth, P256dh: sub.P256dh}},
		&webpush.Options{HTTPClient: p.client, Subscriber: p.subject, TTL: ttl, Urgency: webpush.UrgencyHigh,
			VAPIDPublicKey: keys.PublicKey, VAPIDPrivateKey: keys.PrivateKey})
	if errors.Is(err, ErrPrivateEndpoint) {
		// The name resolved to a non-public address: not connected.
		return Result{Err: ErrPrivateEndpoint, Permanent: true}
	}
	if err != nil {
		// The endpoint is a secret of the device: the message leaves it out.
		return Result{Err: errors.New("push service unreachable")}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		if err := p.db.MarkPushSuccess(ctx, sub.ID, now); err != nil {
			return Result{StatusCode: code} // sent; only the device list's note was not kept
		}
		return Result{StatusCode: code}
	case code == http.StatusNotFound || code == http.StatusGone:
		// The browser unsubscribed or the subscription expired: it never
		// comes back, so the device is dropped.
		if err := p.db.DropPushSubscription(ctx, sub.ID, sub.Endpoint); err != nil {
			return Result{StatusCode: code, Err: errors.New("subscription gone; could not drop it")}
		}
		return Result{StatusCode: code, Err: errors.New("subscription gone; device removed"), Permanent: true}
	default:
		return Result{StatusCode: code, Err: fmt.Errorf("push service answered %d", code)}
	}
}
