package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// VAPIDKeys is the server's Web Push key pair (RFC 8292), both halves
// base64url-encoded without padding: the public key as an uncompressed
// P-256 point, the private key as its 32-byte scalar.
type VAPIDKeys struct {
	PublicKey  string `db:"public_key"`
	PrivateKey string `db:"private_key"`
}

// EnsureVAPIDKeys returns the installation's VAPID keys, creating them
// with generate the first time. Why insert-then-read: when two instances
// start at once, both may generate a pair, but the one-row table admits
// only the first insert (ON CONFLICT DO NOTHING waits for it to commit),
// and both then read the same row, so every instance signs with one key.
func (d *DB) EnsureVAPIDKeys(ctx context.Context, generate func() (VAPIDKeys, error)) (VAPIDKeys, error) {
	k, err := d.vapidKeys(ctx)
	if err == nil || !errors.Is(err, pgx.ErrNoRows) {
		return k, err
	}
	nk, err := generate()
	if err != nil {
		return VAPIDKeys{}, fmt.Errorf("db: generate vapid keys: %w", err)
	}
	if _, err := d.Pool.Exec(ctx, `INSERT INTO vapid_keys (id, public_key, private_key) VALUES (true, $1, $2)
		ON CONFLICT (id) DO NOTHING`, nk.PublicKey, nk.PrivateKey); err != nil {
		return VAPIDKeys{}, fmt.Errorf("db: store vapid keys: %w", err)
	}
	return d.vapidKeys(ctx)
}

func (d *DB) vapidKeys(ctx context.Context) (VAPIDKeys, error) {
	rows, err := d.Pool.Query(ctx, `SELECT public_key, private_key FROM vapid_keys WHERE id`)
	if err != nil {
		return VAPIDKeys{}, fmt.Errorf("db: vapid keys: %w", err)
	}
	k, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[VAPIDKeys])
	if err != nil {
		return VAPIDKeys{}, fmt.Errorf("db: vapid keys: %w", err)
	}
	return k, nil
}
