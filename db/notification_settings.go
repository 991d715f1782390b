package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// NotificationSettings are a person's choices about being told of calls.
type NotificationSettings struct {
	EmailEnabled bool       `db:"email_enabled"`
	LastMailAt   *time.Time `db:"last_mail_at"`
}

// NotificationSettingsFor returns subject's settings, or the defaults
// (email on) when they never changed them.
func (d *DB) NotificationSettingsFor(ctx context.Context, subject string) (NotificationSettings, error) {
	rows, err := d.Pool.Query(ctx, `SELECT email_enabled, last_mail_at FROM notification_settings WHERE user_subject = $1`, subject)
	if err != nil {
		return NotificationSettings{}, fmt.Errorf("db: notification settings: %w", err)
	}
	s, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[NotificationSettings])
	if errors.Is(err, pgx.ErrNoRows) {
		return NotificationSettings{EmailEnabled: true}, nil
	}
	if err != nil {
		return NotificationSettings{}, fmt.Errorf("db: notification settings: %w", err)
	}
	return s, nil
}

// SetEmailEnabled turns subject's notification mails on or off.
func (d *DB) SetEmailEnabled(ctx context.Context, subject string, on bool) error {
	_, err := d.Pool.Exec(ctx, `INSERT INTO notification_settings (user_subject, email_enabled) VALUES ($1, $2)
		ON CONFLICT (user_subject) DO UPDATE SET email_enabled = EXCLUDED.email_enabled`, subject, on)
	if err != nil {
		return fmt.Errorf("db: set email notifications: %w", err)
	}
	return nil
}

// MailRecipient is where a person's notification mails go, and what
// groups their next mail with others.
type MailRecipient struct {
	Email      string     `db:"email"`
	Enabled    bool       `db:"email_enabled"`
	LastMailAt *time.Time `db:"last_mail_at"`
	// LastPlannedAt is when the newest mail delivery for them was planned.
	LastPlannedAt *time.Time `db:"last_planned_at"`
	// WaitingUntil is when the mail already waiting for them goes out, if
	// one waits (a later item joins it).
	WaitingUntil *time.Time `db:"waiting_until"`
}

// MailRecipientFor returns the verified address of the person with
// subject (the one who signed in most recently, should several identity
// providers share a subject) and their settings; ok is false when there is
// no verified address.
func (d *DB) MailRecipientFor(ctx context.Context, subject string, now time.Time) (MailRecipient, bool, error) {
	rows, err := d.Pool.Query(ctx, `SELECT u.email, COALESCE(s.email_enabled, true) AS email_enabled, s.last_mail_at,
		(SELECT max(nd.created_at) FROM notification_deliveries nd WHERE nd.channel = 'email' AND nd.target = $1) AS last_planned_at,
		(SELECT min(nd.next_attempt_at) FROM notification_deliveries nd WHERE nd.channel = 'email' AND nd.target = $1
			AND nd.state = 'pending' AND nd.lease_until IS NULL AND nd.next_attempt_at > $2) AS waiting_until
		FROM users u LEFT JOIN notification_settings s ON s.user_subject = u.subject
		WHERE u.subject = $1 AND u.email_verified AND u.email <> ''
		ORDER BY u.last_seen_at DESC LIMIT 1`, subject, now)
	if err != nil {
		return MailRecipient{}, false, fmt.Errorf("db: mail recipient: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[MailRecipient])
	if errors.Is(err, pgx.ErrNoRows) {
		return MailRecipient{}, false, nil
	}
	if err != nil {
		return MailRecipient{}, false, fmt.Errorf("db: mail recipient: %w", err)
	}
	return r, true, nil
}

// MarkMailed notes when subject was last mailed, so that the next items
// within the grouping window wait and go out together.
func (d *DB) MarkMailed(ctx context.Context, subject string, at time.Time) error {
	_, err := d.Pool.Exec(ctx, `INSERT INTO notification_settings (user_subject, last_mail_at) VALUES ($1, $2)
		ON CONFLICT (user_subject) DO UPDATE SET last_mail_at = EXCLUDED.last_mail_at`, subject, at)
	if err != nil {
		return fmt.Errorf("db: mark mailed: %w", err)
	}
	return nil
}
