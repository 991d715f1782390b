package db

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// SignInFlow is one started OpenID Connect sign-in, kept until its callback
// uses it up or it expires.
type SignInFlow struct {
	Nonce    string `db:"nonce"`
	Verifier string `db:"verifier"`
	Next     string `db:"next_path"`
}

// CodeSignInFlowUnknown is returned for a state that was never issued, is
// already used, has expired or belongs to another browser.
const CodeSignInFlowUnknown = "sign_in_flow_unknown"

// StartSignInFlow stores f under the hash of state, bound to the browser
// holding browserKey, for ttl (measured on the database's clock).
func (d *DB) StartSignInFlow(ctx context.Context, state, browserKey string, f SignInFlow, ttl time.Duration) error {
	sh, bh := sha256.Sum256([]byte(state)), sha256.Sum256([]byte(browserKey))
	_, err := d.Pool.Exec(ctx, `
		INSERT INTO oidc_flows (state_hash, browser_hash, nonce, verifier, next_path, expires_at)
		VALUES ($1, $2, $3, $4, $5, now() + $6::interval)`,
		sh[:], bh[:], f.Nonce, f.Verifier, f.Next, ttl)
	if err != nil {
		return fmt.Errorf("db: start sign-in flow: %w", err)
	}
	return nil
}

// TakeSignInFlow uses up the flow started under state: the row is deleted
// whatever follows, so a state works once. It fails with
// CodeSignInFlowUnknown unless the flow exists, has not expired, and was
// started by the browser holding browserKey.
func (d *DB) TakeSignInFlow(ctx context.Context, state, browserKey string) (SignInFlow, error) {
	unknown := approval.Errorf(approval.KindNotFound, CodeSignInFlowUnknown, "This sign-in has expired or was already used.")
	if state == "" {
		return SignInFlow{}, unknown
	}
	sh, bh := sha256.Sum256([]byte(state)), sha256.Sum256([]byte(browserKey))
	var (
		f       SignInFlow
		browser []byte
		live    bool
	)
	err := d.Pool.QueryRow(ctx, `
		DELETE FROM oidc_flows WHERE state_hash = $1
		RETURNING nonce, verifier, next_path, browser_hash, expires_at > now()`, sh[:]).
		Scan(&f.Nonce, &f.Verifier, &f.Next, &browser, &live)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return SignInFlow{}, unknown
	case err != nil:
		return SignInFlow{}, fmt.Errorf("db: take sign-in flow: %w", err)
	case !live || browserKey == "" || subtle.ConstantTimeCompare(browser, bh[:]) != 1:
		return SignInFlow{}, unknown
	}
	return f, nil
}

// SweepSignInFlows deletes unfinished sign-ins past their expiry.
func (d *DB) SweepSignInFlows(ctx context.Context) (int64, error) {
	tag, err := d.Pool.Exec(ctx, `DELETE FROM oidc_flows WHERE expires_at <= now()`)
	if err != nil {
		return 0, fmt.Errorf("db: sweep sign-in flows: %w", err)
	}
	return tag.RowsAffected(), nil
}
