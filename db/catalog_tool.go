package db

import (
	"context"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// ToolRegistration is one tool registered on its own, without the rest of
// its connector's list.
type ToolRegistration struct {
	Connector            string
	ConnectorDisplayName string // used only when the connector is created
	ConnectorKind        string // used only when the connector is created
	Tool                 ToolSync
}

// ToolRegistered says what a registration did.
type ToolRegistered struct {
	ConnectorCreated bool
	Created          bool // the tool is new: it got the default policy
	Restored         bool // the tool had been retired and is back, with its policy
	Tool             Tool
}

// RegisterTool adds or updates one tool and leaves the connector's other
// tools alone. The same rules as a full sync hold: a new tool gets the
// default policy for its annotations, an existing or retired one keeps its
// policy. A missing connector is created; an existing one keeps its
// display name and kind (one tool does not rename it). A deleted connector
// is not brought back: a runtime that sees a tool must not undo an
// admin's deletion behind their back, so that is refused (409
// connector_deleted) until a full sync re-creates the connector.
func (d *DB) RegisterTool(ctx context.Context, actor approval.Actor, r ToolRegistration) (ToolRegistered, error) {
	var out ToolRegistered
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		out = ToolRegistered{}
		var deleted bool
		err := tx.QueryRow(ctx, `
			WITH ins AS (
				INSERT INTO connectors (name, display_name, kind) VALUES ($1, $2, $3)
				ON CONFLICT (name) DO NOTHING RETURNING true AS created)
			SELECT COALESCE((SELECT created FROM ins), false),
				COALESCE((SELECT deleted_at IS NOT NULL FROM connectors WHERE name = $1 FOR UPDATE), false)`,
			r.Connector, r.ConnectorDisplayName, r.ConnectorKind).Scan(&out.ConnectorCreated, &deleted)
		if err != nil {
			return err
		}
		if deleted {
			return approval.Errorf(approval.KindConflict, approval.CodeConnectorDeleted,
				"The connector %q was deleted by an administrator; sync its full tool list to bring it back.", r.Connector)
		}
		var wasRetired *bool
		if err := tx.QueryRow(ctx, `SELECT retired_at IS NOT NULL FROM tools WHERE connector = $1 AND name = $2 FOR UPDATE`,
			r.Connector, r.Tool.Name).Scan(&wasRetired); err != nil && err != pgx.ErrNoRows {
			return err
		}
		created, changed, err := upsertTool(ctx, tx, r.Connector, r.Tool)
		if err != nil {
			return err
		}
		out.Created, out.Restored = created, wasRetired != nil && *wasRetired
		if out.Tool, err = activeTool(ctx, tx, r.Connector, r.Tool.Name, true); err != nil {
			return err
		}
		// A registration that changed nothing but texts is not audited: a
		// hook registers the tools it sees, and would fill the log.
		if !created && !out.Restored && !changed {
			return nil
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionToolRegistered,
			Connector: r.Connector, Tool: r.Tool.Name,
			Detail: map[string]any{"new": created, "restored": out.Restored, "annotations_changed": changed}})
	})
	return out, translate("register tool", err)
}
