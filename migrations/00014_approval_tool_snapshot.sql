-- +goose Up
-- What the reviewer is shown about the tool, as it was when the call was
-- checked: a later catalog sync can rename a tool or change its hints, and
-- must not relabel a call already waiting (invariant 13). NULL in rows made
-- before this column existed: they show the catalog's current values.
-- shown_hints_taken says the three hints below were taken (a NULL hint
-- then means "absent", which takes the MCP default).
ALTER TABLE approvals
    ADD COLUMN shown_tool_display      TEXT,
    ADD COLUMN shown_connector_display TEXT,
    ADD COLUMN shown_connector_kind    TEXT,
    ADD COLUMN shown_hints_taken       BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN shown_read_only_hint    BOOLEAN,
    ADD COLUMN shown_destructive_hint  BOOLEAN,
    ADD COLUMN shown_open_world_hint   BOOLEAN;

-- +goose Down
ALTER TABLE approvals
    DROP COLUMN shown_tool_display,
    DROP COLUMN shown_connector_display,
    DROP COLUMN shown_connector_kind,
    DROP COLUMN shown_hints_taken,
    DROP COLUMN shown_read_only_hint,
    DROP COLUMN shown_destructive_hint,
    DROP COLUMN shown_open_world_hint;
