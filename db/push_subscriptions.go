package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// PushSubscription is one browser or phone that receives a person's
// pushes: the push service's endpoint and the browser's keys (RFC 8291).
type PushSubscription struct {
	ID            int64      `db:"id"`
	Subject       string     `db:"user_subject"`
	Endpoint      string     `db:"endpoint"`
	P256dh        string     `db:"p256dh"`
	Auth          string     `db:"auth"`
	DeviceName    string     `db:"device_name"`
	CreatedAt     time.Time  `db:"created_at"`
	LastSuccessAt *time.Time `db:"last_success_at"`
}

const pushColumns = `id, user_subject, endpoint, p256dh, auth, device_name, created_at, last_success_at`

// SavePushSubscription records s for s.Subject. A browser has one
// endpoint: subscribing it again (new keys, or another person signed in
// there) replaces the row, so one device never receives two people's
// pushes.
func (d *DB) SavePushSubscription(ctx context.Context, s PushSubscription) (PushSubscription, error) {
	rows, err := d.Pool.Query(ctx, `INSERT INTO push_subscriptions (user_subject, endpoint, p256dh, auth, device_name)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (endpoint) DO UPDATE SET user_subject = EXCLUDED.user_subject, p256dh = EXCLUDED.p256dh,
			auth = EXCLUDED.auth, device_name = EXCLUDED.device_name, created_at = now(), last_success_at = NULL
		RETURNING `+pushColumns, s.Subject, s.Endpoint, s.P256dh, s.Auth, s.DeviceName)
	if err != nil {
		return PushSubscription{}, fmt.Errorf("db: save push subscription: %w", err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[PushSubscription])
	if err != nil {
		return PushSubscription{}, fmt.Errorf("db: save push subscription: %w", err)
	}
	return out, nil
}

// PushSubscriptionsOf lists subject's devices, oldest first.
func (d *DB) PushSubscriptionsOf(ctx context.Context, subject string) ([]PushSubscription, error) {
	rows, err := d.Pool.Query(ctx, `SELECT `+pushColumns+` FROM push_subscriptions WHERE user_subject = $1 ORDER BY id`, subject)
	if err != nil {
		return nil, fmt.Errorf("db: push subscriptions: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[PushSubscription])
	if err != nil {
		return nil, fmt.Errorf("db: push subscriptions: %w", err)
	}
	return list, nil
}

// PushSubscriptionsOfMany is PushSubscriptionsOf for several people in one
// statement (the notifications planned together): each subject with a
// device maps to its devices, oldest first.
func (d *DB) PushSubscriptionsOfMany(ctx context.Context, subjects []string) (map[string][]PushSubscription, error) {
	out := make(map[string][]PushSubscription, len(subjects))
	if len(subjects) == 0 {
		return out, nil
	}
	rows, err := d.Pool.Query(ctx, `SELECT `+pushColumns+` FROM push_subscriptions WHERE user_subject = ANY($1::text[]) ORDER BY user_subject, id`, subjects)
	if err != nil {
		return nil, fmt.Errorf("db: push subscriptions: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[PushSubscription])
	if err != nil {
		return nil, fmt.Errorf("db: push subscriptions: %w", err)
	}
	for _, s := range list {
		out[s.Subject] = append(out[s.Subject], s)
	}
	return out, nil
}

// PushSubscription returns the device with id; not found is a
// KindNotFound error.
func (d *DB) PushSubscription(ctx context.Context, id int64) (PushSubscription, error) {
	rows, err := d.Pool.Query(ctx, `SELECT `+pushColumns+` FROM push_subscriptions WHERE id = $1`, id)
	if err != nil {
		return PushSubscription{}, fmt.Errorf("db: push subscription: %w", err)
	}
	s, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[PushSubscription])
	if errors.Is(err, pgx.ErrNoRows) {
		return PushSubscription{}, errNoDevice()
	}
	if err != nil {
		return PushSubscription{}, fmt.Errorf("db: push subscription: %w", err)
	}
	return s, nil
}

func errNoDevice() error {
	return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such device.")
}

// DeletePushSubscription removes subject's device id. Another person's
// device is not found, exactly like a device that does not exist.
func (d *DB) DeletePushSubscription(ctx context.Context, subject string, id int64) error {
	tag, err := d.Pool.Exec(ctx, `DELETE FROM push_subscriptions WHERE id = $1 AND user_subject = $2`, id, subject)
	if err != nil {
		return fmt.Errorf("db: delete push subscription: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return errNoDevice()
	}
	return nil
}

// DropPushSubscription removes a device the push service reported gone
// (404 or 410), whoever it belongs to. Only the row with that endpoint
// goes: if the browser subscribed again meanwhile, its new row stays.
func (d *DB) DropPushSubscription(ctx context.Context, id int64, endpoint string) error {
	if _, err := d.Pool.Exec(ctx, `DELETE FROM push_subscriptions WHERE id = $1 AND endpoint = $2`, id, endpoint); err != nil {
		return fmt.Errorf("db: drop push subscription: %w", err)
	}
	return nil
}

// MarkPushSuccess notes that a push to device id was accepted at.
func (d *DB) MarkPushSuccess(ctx context.Context, id int64, at time.Time) error {
	if _, err := d.Pool.Exec(ctx, `UPDATE push_subscriptions SET last_success_at = $2 WHERE id = $1`, id, at); err != nil {
		return fmt.Errorf("db: mark push success: %w", err)
	}
	return nil
}
