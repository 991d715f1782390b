package db

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewDelivery is one planned delivery of an event: a channel and a target
// on it (a person for email, a webhook id), not sent before NotBefore.
type NewDelivery struct {
	Channel   string
	Target    string
	NotBefore time.Time
}

// PlanEvents takes up to limit events nobody has planned yet, asks plan for
// each one's deliveries, records them and marks the events planned, in one
// transaction. The events are locked with SKIP LOCKED, so instances
// planning at the same time share the work and no event is planned twice.
func (d *DB) PlanEvents(ctx context.Context, limit int, now time.Time, plan func(NotificationEvent) ([]NewDelivery, error)) (int, error) {
	return d.PlanEventsWith(ctx, limit, now, nil, plan)
}

// PlanEventsWith is PlanEvents that first shows prepare the whole batch of
// events, in their order, before plan is asked about each: a planner can
// then read what the batch needs in one statement rather than one per
// event. An error from prepare ends the batch as plan's would.
func (d *DB) PlanEventsWith(ctx context.Context, limit int, now time.Time, prepare func([]NotificationEvent) error,
	plan func(NotificationEvent) ([]NewDelivery, error)) (int, error) {
	n := 0
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		// The events are marked planned as they are taken, by their row's
		// address: a join on ids could be planned as a scan of the whole
		// outbox while its statistics lag behind a burst. The transaction
		// rolls the mark back if planning fails.
		rows, err := tx.Query(ctx, `
			WITH picked AS (SELECT ctid FROM notification_events WHERE planned_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
			UPDATE notification_events e SET planned_at = now() FROM picked WHERE e.ctid = picked.ctid
			RETURNING e.id, e.kind, e.approval_id::text AS approval_id, e.owner_subject, e.connector, e.tool, e.playbook_id,
				e.detail, e.created_at`, limit)
		if err != nil {
			return err
		}
		events, err := pgx.CollectRows(rows, pgx.RowToStructByName[NotificationEvent])
		if err != nil {
			return err
		}
		slices.SortFunc(events, func(a, b NotificationEvent) int { return cmp.Compare(a.ID, b.ID) })
		if prepare != nil && len(events) > 0 {
			if err := prepare(events); err != nil {
				return err
			}
		}
		var eventIDs []int64
		var channels, targets []string
		var notBefore []time.Time
		for _, ev := range events {
			list, err := plan(ev)
			if err != nil {
				return err
			}
			for _, nd := range list {
				eventIDs, channels, targets, notBefore = append(eventIDs, ev.ID), append(channels, nd.Channel),
					append(targets, nd.Target), append(notBefore, nd.NotBefore)
			}
		}
		if len(eventIDs) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO notification_deliveries (event_id, channel, target, next_attempt_at, created_at)
				SELECT e, c, t, nb, $5 FROM unnest($1::bigint[], $2::text[], $3::text[], $4::timestamptz[]) AS u(e, c, t, nb)
				ON CONFLICT DO NOTHING`, eventIDs, channels, targets, notBefore, now); err != nil {
				return err
			}
		}
		n = len(events)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("db: plan notifications: %w", err)
	}
	return n, nil
}

// Delivery is a claimed delivery with what its message may say: the
// event, and for an item the tool's and connector's display names, the
// agent key's name and the expiry. Never argument contents.
type Delivery struct {
	ID               int64          `db:"id"`
	Channel          string         `db:"channel"`
	Target           string         `db:"target"`
	Attempts         int            `db:"attempts"`
	CreatedAt        time.Time      `db:"created_at"`
	EventID          int64          `db:"event_id"`
	Kind             string         `db:"kind"`
	ApprovalID       string         `db:"approval_id"`
	Owner            string         `db:"owner_subject"`
	Connector        string         `db:"connector"`
	Tool             string         `db:"tool"`
	PlaybookID       string         `db:"playbook_id"`
	Detail           map[string]any `db:"detail"`
	EventAt          time.Time      `db:"event_at"`
	ToolDisplay      string         `db:"tool_display"`
	ConnectorDisplay string         `db:"connector_display"`
	AgentKey         string         `db:"agent_key"`
	ExpiresAt        *time.Time     `db:"expires_at"`
	Status           string         `db:"status"` // the item's status now
}

// ClaimDeliveries leases up to limit deliveries of channel that are due at
// now and not leased by another instance, so that each is sent by one
// instance; a lease that ran out (its instance died mid-send) is taken
// over. Each claim counts as an attempt.
func (d *DB) ClaimDeliveries(ctx context.Context, channel string, now time.Time, lease time.Duration, limit int) ([]Delivery, error) {
	rows, err := d.Pool.Query(ctx, `
		WITH claimed AS (
			UPDATE notification_deliveries SET lease_until = $2::timestamptz + $3::interval, attempts = attempts + 1
			WHERE id IN (SELECT id FROM notification_deliveries
				WHERE channel = $1 AND state = 'pending' AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until <= $2)
				ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
			RETURNING id, channel, target, attempts, created_at, event_id)
		SELECT c.id, c.channel, c.target, c.attempts, c.created_at, c.event_id, e.kind,
			COALESCE(e.approval_id::text, '') AS approval_id, e.owner_subject, e.connector, e.tool, e.playbook_id, e.detail,
			e.created_at AS event_at, COALESCE(t.display_name, e.tool) AS tool_display,
			COALESCE(cn.display_name, e.connector) AS connector_display, COALESCE(k.name, '') AS agent_key,
			a.expires_at, COALESCE(a.status, '') AS status
		FROM claimed c JOIN notification_events e ON e.id = c.event_id
		LEFT JOIN approvals a ON a.id = e.approval_id
		LEFT JOIN api_keys k ON k.id = a.api_key_id
		LEFT JOIN tools t ON t.connector = e.connector AND t.name = e.tool
		LEFT JOIN connectors cn ON cn.name = e.connector
		ORDER BY c.id`, channel, now, lease, limit)
	if err != nil {
		return nil, fmt.Errorf("db: claim deliveries: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Delivery])
	if err != nil {
		return nil, fmt.Errorf("db: claim deliveries: %w", err)
	}
	return list, nil
}

// Attempt is how one delivery attempt went.
type Attempt struct {
	At         time.Time
	StatusCode int    // the receiver's HTTP status, if any
	Outcome    string // "sent", or what went wrong, for the admin page
}

// FinishAttempt records an attempt and what follows: sent, retried at
// retryAt, or failed for good when retryAt is nil.
func (d *DB) FinishAttempt(ctx context.Context, id int64, a Attempt, sent bool, retryAt *time.Time) error {
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO notification_attempts (delivery_id, at, status_code, outcome) VALUES ($1, $2, $3, $4)`,
			id, a.At, a.StatusCode, a.Outcome); err != nil {
			return err
		}
		var err error
		switch {
		case sent:
			_, err = tx.Exec(ctx, `UPDATE notification_deliveries SET state = 'sent', done_at = $2, lease_until = NULL WHERE id = $1`, id, a.At)
		case retryAt != nil:
			_, err = tx.Exec(ctx, `UPDATE notification_deliveries SET next_attempt_at = $2, lease_until = NULL WHERE id = $1`, id, *retryAt)
		default:
			_, err = tx.Exec(ctx, `UPDATE notification_deliveries SET state = 'failed', done_at = $2, lease_until = NULL WHERE id = $1`, id, a.At)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("db: finish delivery attempt: %w", err)
	}
	return nil
}

// PruneNotifications removes deliveries finished before cutoff with their
// attempts, and events whose deliveries are all gone; it returns how many
// deliveries it removed.
func (d *DB) PruneNotifications(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM notification_attempts WHERE delivery_id IN
			(SELECT id FROM notification_deliveries WHERE state <> 'pending' AND done_at < $1)`, cutoff); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM notification_deliveries WHERE state <> 'pending' AND done_at < $1`, cutoff)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `DELETE FROM notification_events e WHERE e.planned_at < $1
			AND NOT EXISTS (SELECT 1 FROM notification_deliveries nd WHERE nd.event_id = e.id)`, cutoff)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("db: prune notifications: %w", err)
	}
	return n, nil
}
