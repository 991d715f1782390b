package db

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// ConfirmedGrant is the scoped grant an item's approval made, as the
// person confirmed it.
type ConfirmedGrant struct {
	Scope     approval.GrantScope
	ExpiresAt *time.Time // nil: until revoked
}

// ConfirmedGrant is what the scoped grant ("Always allow calls like this")
// an item's approval made covers, as the person confirmed it — for the
// runtime that asked, on the item's answer. It is nil when the item made
// no scoped grant, or the grant was revoked since. The lookup rides the
// grant lookup index (owner and tool of active grants).
func (d *DB) ConfirmedGrant(ctx context.Context, a Approval) (*ConfirmedGrant, error) {
	if a.Scope == nil || *a.Scope != "always" {
		return nil, nil
	}
	var raw []byte
	var until *time.Time
	err := d.Pool.QueryRow(ctx, `SELECT scope, expires_at FROM standing_grants
		WHERE user_subject = $1 AND tool_id = $2 AND revoked_at IS NULL AND approval_id = $3::uuid AND scope IS NOT NULL
		LIMIT 1`, a.OwnerSubject, a.ToolID, a.ID).Scan(&raw, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate("confirmed scope", err)
	}
	var g ConfirmedGrant
	if err := json.Unmarshal(raw, &g.Scope); err != nil || (g.Scope.Shell == nil) == (g.Scope.Args == nil) {
		return nil, nil // not a scope this server reads: none is reported
	}
	if until != nil {
		t := until.UTC()
		g.ExpiresAt = &t
	}
	return &g, nil
}
