package db

import (
	"context"
	"fmt"
	"time"
)

// SweepSessions deletes expired sessions.
func (d *DB) SweepSessions(ctx context.Context) (int64, error) {
	tag, err := d.Pool.Exec(ctx, `DELETE FROM sessions WHERE expiry < now()`)
	if err != nil {
		return 0, fmt.Errorf("db: sweep sessions: %w", err)
	}
	return tag.RowsAffected(), nil
}

// RemoveOldPreviews deletes the argument preview, the runtime's diff and
// the agent's reason of items decided more than retention ago, at most
// limit at a time; the digest, the size and the audit lines stay.
func (d *DB) RemoveOldPreviews(ctx context.Context, retention time.Duration, limit int) (int64, error) {
	tag, err := d.Pool.Exec(ctx, `UPDATE approvals SET preview = '{"parsed": false, "removed": true}'::jsonb, agent_reason = '',
		context_diff = CASE WHEN context_diff IS NULL THEN NULL ELSE '{"parsed": false, "removed": true, "length": 0}'::jsonb END,
		preview_removed_at = now()
		WHERE id IN (SELECT id FROM approvals WHERE preview_removed_at IS NULL AND decided_at IS NOT NULL
			AND decided_at < now() - $1::interval ORDER BY decided_at LIMIT $2)`, retention, limit)
	if err != nil {
		return 0, fmt.Errorf("db: remove old previews: %w", err)
	}
	return tag.RowsAffected(), nil
}
