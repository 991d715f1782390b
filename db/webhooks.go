package db

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// Webhook is an admin's endpoint that receives signed event posts.
type Webhook struct {
	ID        int64     `db:"id"`
	URL       string    `db:"url"`
	Secret    string    `db:"secret"`
	Events    []string  `db:"events"`
	CreatedAt time.Time `db:"created_at"`
}

// SecretHint is the most of the secret the admin page shows: its last four
// characters.
func (w Webhook) SecretHint() string {
	r := []rune(w.Secret)
	if len(r) <= 4 {
		return "…"
	}
	return "…" + string(r[len(r)-4:])
}

// MaskedURL is the URL as the admin page shows it: scheme, host and the
// path's last four characters. A chat tool's incoming-webhook URL is a
// secret in itself, so it is not shown back in full either.
func MaskedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "…"
	}
	out := u.Scheme + "://" + u.Host
	if rest := []rune(strings.TrimPrefix(u.EscapedPath(), "/") + u.RawQuery); len(rest) > 8 {
		out += "/…" + string(rest[len(rest)-4:])
	} else if len(rest) > 0 {
		out += "/…"
	}
	return out
}

// WebhookInput is what the admin's form sends.
type WebhookInput struct {
	URL    string
	Secret string
	Events []string
}

// MinWebhookSecret is the shortest secret accepted, in characters.
const MinWebhookSecret = 16

// Problems checks in and returns a message per field ("url", "secret",
// "events"); none means valid.
func (in WebhookInput) Problems() map[string]string {
	p := map[string]string{}
	u, err := url.Parse(strings.TrimSpace(in.URL))
	switch {
	case in.URL == "" || err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		p["url"] = "Enter an absolute http:// or https:// URL."
	case u.User != nil:
		p["url"] = "Put credentials in the secret, not in the URL."
	case len(in.URL) > 2000:
		p["url"] = "The URL is too long (at most 2000 characters)."
	}
	if n := len([]rune(in.Secret)); n < MinWebhookSecret || n > 200 {
		p["secret"] = fmt.Sprintf("The secret needs %d to 200 characters.", MinWebhookSecret)
	} else if strings.ContainsFunc(in.Secret, lineOrControl) {
		// A line break or another control character in a secret is a paste
		// gone wrong, and would not survive being typed in at the receiver.
		p["secret"] = "The secret must not contain line breaks or other control characters."
	}
	if len(in.Events) == 0 {
		p["events"] = "Choose at least one event."
	}
	for _, e := range in.Events {
		if !slices.Contains(EventKinds, e) {
			p["events"] = "Choose events from the list."
		}
	}
	return p
}

// CreateWebhook adds an endpoint; in must be valid (see Problems).
func (d *DB) CreateWebhook(ctx context.Context, in WebhookInput, by User) (Webhook, error) {
	if len(in.Problems()) > 0 {
		return Webhook{}, approval.Errorf(approval.KindUnprocessable, approval.CodeInvalidRequest, "The webhook is not valid.")
	}
	var w Webhook
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO webhooks (url, secret, events, created_by) VALUES ($1, $2, $3, $4)
			RETURNING id, url, secret, events, created_at`, strings.TrimSpace(in.URL), in.Secret, in.Events, by.ID)
		if err != nil {
			return err
		}
		if w, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Webhook]); err != nil {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: by.Actor(), Action: "webhook created",
			Detail: map[string]any{"webhook_id": w.ID, "events": in.Events}})
	})
	return w, translate("create webhook", err)
}

// DeleteWebhook removes an endpoint; deliveries still queued for it fail.
func (d *DB) DeleteWebhook(ctx context.Context, id int64, by User) error {
	return translate("delete webhook", d.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhooks SET deleted_at = now() WHERE id = $1 AND deleted_at IS NULL`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return pgx.ErrNoRows
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: by.Actor(), Action: "webhook deleted",
			Detail: map[string]any{"webhook_id": id}})
	}))
}

const webhookColumns = `id, url, secret, events, created_at`

// ListWebhooks lists the endpoints, oldest first.
func (d *DB) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	rows, err := d.Pool.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE deleted_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, translate("list webhooks", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Webhook])
	return list, translate("list webhooks", err)
}

// WebhookByID returns a live endpoint.
func (d *DB) WebhookByID(ctx context.Context, id int64) (Webhook, error) {
	rows, err := d.Pool.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1 AND deleted_at IS NULL`, id)
	if err != nil {
		return Webhook{}, translate("webhook", err)
	}
	w, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Webhook])
	return w, translate("webhook", err)
}

// WebhookTargets lists the ids of the endpoints subscribed to kind, as
// delivery targets.
func (d *DB) WebhookTargets(ctx context.Context, kind string) ([]string, error) {
	rows, err := d.Pool.Query(ctx, `SELECT id FROM webhooks WHERE deleted_at IS NULL AND $1 = ANY (events) ORDER BY id`, kind)
	if err != nil {
		return nil, translate("webhook targets", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatInt(id, 10)
	}
	return out, translate("webhook targets", err)
}

// QueueTestEvent queues a test event for one endpoint, delivered like any
// other: through the outbox, with retries.
func (d *DB) QueueTestEvent(ctx context.Context, id int64, now time.Time) error {
	return translate("queue test event", d.InTx(ctx, func(tx pgx.Tx) error {
		var ev int64
		err := tx.QueryRow(ctx, `INSERT INTO notification_events (kind, detail, planned_at)
			SELECT $2, jsonb_build_object('webhook_id', w.id), now() FROM webhooks w WHERE w.id = $1 AND w.deleted_at IS NULL
			RETURNING id`, id, EventTest).Scan(&ev)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO notification_deliveries (event_id, channel, target, next_attempt_at, created_at)
			VALUES ($1, 'webhook', $2, $3, $3)`, ev, strconv.FormatInt(id, 10), now); err != nil {
			return err
		}
		return notifyOutbox(ctx, tx)
	}))
}

// WebhookAttempt is one delivery attempt as the admin page lists it.
type WebhookAttempt struct {
	WebhookID  int64     `db:"webhook_id"`
	URL        string    `db:"url"`
	Kind       string    `db:"kind"`
	DeliveryID int64     `db:"delivery_id"`
	State      string    `db:"state"`
	At         time.Time `db:"at"`
	StatusCode int       `db:"status_code"`
	Outcome    string    `db:"outcome"`
}

// RecentWebhookAttempts lists the last limit attempts, newest first.
func (d *DB) RecentWebhookAttempts(ctx context.Context, limit int) ([]WebhookAttempt, error) {
	rows, err := d.Pool.Query(ctx, `SELECT w.id AS webhook_id, w.url, e.kind, nd.id AS delivery_id, nd.state, na.at, na.status_code, na.outcome
		FROM notification_attempts na JOIN notification_deliveries nd ON nd.id = na.delivery_id
		JOIN notification_events e ON e.id = nd.event_id
		JOIN webhooks w ON nd.channel = 'webhook' AND w.id::text = nd.target
		ORDER BY na.id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, translate("webhook attempts", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[WebhookAttempt])
	return list, translate("webhook attempts", err)
}

// lineOrControl reports a control character or a line separator that is
// not one (U+2028, U+2029): none belongs in a secret or a name.
func lineOrControl(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }
