package db

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ToolInsight is one tool's approval figures over a window.
type ToolInsight struct {
	Connector        string   `db:"connector"`
	Tool             string   `db:"tool"`
	ToolDisplay      string   `db:"tool_display"`
	ConnectorDisplay string   `db:"connector_display"`
	ConnectorKind    string   `db:"connector_kind"`
	Requests         int      `db:"requests"`
	Approved         int      `db:"approved"`
	Rejected         int      `db:"rejected"`
	Expired          int      `db:"expired"`
	Cancelled        int      `db:"cancelled"`
	MedianSeconds    *float64 `db:"p50"`
	P90Seconds       *float64 `db:"p90"`
	AutoConversation int      `db:"auto_conversation"`
	AutoAlways       int      `db:"auto_always"`
}

// Decisions is how many requests a person answered.
func (t ToolInsight) Decisions() int { return t.Approved + t.Rejected }

// Insights returns per-tool figures for requests created in the window,
// and auto-approvals by standing grants in the same window.
func (d *DB) Insights(ctx context.Context, window time.Duration) ([]ToolInsight, error) {
	rows, err := d.Pool.Query(ctx, `
		WITH req AS (
			SELECT a.connector, a.tool,
				count(*) AS requests,
				count(*) FILTER (WHERE a.status IN ('approved', 'consumed')) AS approved,
				count(*) FILTER (WHERE a.status = 'rejected') AS rejected,
				count(*) FILTER (WHERE a.status = 'expired') AS expired,
				count(*) FILTER (WHERE a.status = 'cancelled') AS cancelled,
				percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM a.decided_at - a.created_at))
					FILTER (WHERE a.status IN ('approved', 'consumed', 'rejected')) AS p50,
				percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM a.decided_at - a.created_at))
					FILTER (WHERE a.status IN ('approved', 'consumed', 'rejected')) AS p90
			FROM approvals a WHERE a.created_at >= now() - $1::interval
			GROUP BY a.connector, a.tool),
		auto AS (
			SELECT e.connector, e.tool,
				count(*) FILTER (WHERE e.action = 'auto-approved by conversation grant') AS auto_conversation,
				count(*) FILTER (WHERE e.action = 'auto-approved by Always allow') AS auto_always
			FROM audit_events e
			WHERE e.at >= now() - $1::interval AND e.action IN ('auto-approved by conversation grant', 'auto-approved by Always allow')
			GROUP BY e.connector, e.tool)
		SELECT t.connector, t.name AS tool, t.display_name AS tool_display, c.display_name AS connector_display,
			c.kind AS connector_kind, COALESCE(r.requests, 0) AS requests, COALESCE(r.approved, 0) AS approved,
			COALESCE(r.rejected, 0) AS rejected, COALESCE(r.expired, 0) AS expired, COALESCE(r.cancelled, 0) AS cancelled,
			r.p50, r.p90, COALESCE(x.auto_conversation, 0) AS auto_conversation, COALESCE(x.auto_always, 0) AS auto_always
		FROM tools t JOIN connectors c ON c.name = t.connector
		LEFT JOIN req r ON r.connector = t.connector AND r.tool = t.name
		LEFT JOIN auto x ON x.connector = t.connector AND x.tool = t.name
		WHERE r.requests IS NOT NULL OR x.tool IS NOT NULL
		ORDER BY COALESCE(r.requests, 0) DESC, t.connector, t.name`, window)
	if err != nil {
		return nil, translate("insights", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[ToolInsight])
	return list, translate("insights", err)
}
