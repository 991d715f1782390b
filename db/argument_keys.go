package db

import (
	"context"
	"strings"
)

// ArgumentKey is an argument name seen in a tool's recent calls, with the
// kind of value it held ("list", "object", "number", "bool" or "text"):
// enough to suggest conditions, never the value itself.
type ArgumentKey struct {
	Name string `db:"name"`
	Kind string `db:"kind"`
}

// ToolArgumentKeys lists the top-level argument names of the tool's last
// 50 calls with readable arguments, in alphabetical order (at most 30). It
// reads the stored previews' keys: arguments are never stored in full.
func (d *DB) ToolArgumentKeys(ctx context.Context, toolID int64) ([]ArgumentKey, error) {
	rows, err := d.Pool.Query(ctx, `SELECT DISTINCT ON (l->>'key') l->>'key' AS name, COALESCE(l->>'value', '') AS value
		FROM (SELECT preview FROM approvals WHERE tool_id = $1 AND preview->>'parsed' = 'true' ORDER BY created_at DESC LIMIT 50) a,
			jsonb_array_elements(a.preview->'lines') l
		WHERE l->>'key' <> '' ORDER BY l->>'key' LIMIT 30`, toolID)
	if err != nil {
		return nil, translate("tool argument keys", err)
	}
	defer rows.Close()
	keys := []ArgumentKey{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, translate("tool argument keys", err)
		}
		keys = append(keys, ArgumentKey{Name: name, Kind: valueKind(value)})
	}
	return keys, translate("tool argument keys", rows.Err())
}

// valueKind guesses a value's JSON kind from its preview text: objects and
// arrays are shown as JSON, scalars as written.
func valueKind(v string) string {
	switch {
	case strings.HasPrefix(v, "["):
		return "list"
	case strings.HasPrefix(v, "{"):
		return "object"
	case v == "true" || v == "false":
		return "bool"
	case v != "" && strings.Trim(v, "0123456789.-") == "":
		return "number"
	}
	return "text"
}
