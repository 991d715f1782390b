-- +goose Up
-- Audit seals move to a table of their own (audit_chain), written once,
-- instead of onto each line. Sealing a line used to UPDATE its row in
-- audit_events: a change of an indexed column (seq), so never a HOT
-- update — a second copy of the row, an entry in each of the table's nine
-- indexes, the append-only trigger comparing every column, and a dead row
-- for vacuum to clear, all for every line. Measured on the policy allow
-- path, that UPDATE was a quarter of Postgres's time per check. An INSERT
-- of a narrow row does the same job.
--
-- This migration makes the tables and starts the queue of lines waiting
-- for their seal (audit_pending); the next one (00042) copies the seals
-- made so far and switches the sealer. Two migrations, so that the trigger
-- below, whose creation holds off writers of audit lines until its
-- transaction commits, commits at once and not after the copy.
--
-- audit_chain holds, for every sealed line, its place in the chain (seq),
-- the previous line's hash and its own; event_xid and event_id are the
-- line's transaction id and id, the order it was sealed in.
CREATE TABLE audit_chain (
    seq BIGINT PRIMARY KEY,
    event_id BIGINT NOT NULL UNIQUE,
    event_xid xid8,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION audit_chain_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_chain is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_chain_no_update_delete BEFORE UPDATE OR DELETE ON audit_chain
    FOR EACH ROW EXECUTE FUNCTION audit_chain_append_only();
CREATE TRIGGER audit_chain_no_truncate BEFORE TRUNCATE ON audit_chain
    FOR EACH STATEMENT EXECUTE FUNCTION audit_chain_append_only();

-- audit_pending is the queue of lines waiting for their seal, by the
-- order they are sealed in: every new line enters it in the statement that
-- writes it (a trigger per statement, not per line), and leaves it in the
-- transaction that seals it. The sealer never goes by a position in the
-- chain: transaction ids start again in a database restored into another
-- cluster, and a line is waiting exactly while it is in the queue.
CREATE TABLE audit_pending (
    xid xid8 NOT NULL,
    id BIGINT NOT NULL,
    PRIMARY KEY (xid, id)
);

-- +goose StatementBegin
CREATE FUNCTION audit_events_pending() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_pending (xid, id) SELECT l.xid, l.id FROM new_lines l;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_events_pending AFTER INSERT ON audit_events
    REFERENCING NEW TABLE AS new_lines
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_pending();

-- The hash of an event at place seq of the chain after prev: the formula
-- of migration 00004, with the place given apart from the event's row (the
-- row's own seq is no longer written). audit_event_hash is this function
-- for a row that carries its place, as before.
-- +goose StatementBegin
CREATE FUNCTION audit_chain_hash(prev TEXT, place BIGINT, e audit_events) RETURNS TEXT
LANGUAGE sql IMMUTABLE AS $$
    SELECT encode(sha256(convert_to(jsonb_build_array(
        prev, place, to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        e.actor_kind, e.actor_id, e.actor_name, e.action, e.connector, e.tool, e.conversation_id,
        e.turn_id, e.playbook_id, e.run_id, e.approval_id, e.detail)::text, 'UTF8')), 'hex')
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_event_hash(prev TEXT, e audit_events) RETURNS TEXT
LANGUAGE sql IMMUTABLE AS $$
    SELECT audit_chain_hash(prev, e.seq, e)
$$;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER audit_events_pending ON audit_events;
DROP FUNCTION audit_events_pending();
DROP TABLE audit_pending;
DROP TABLE audit_chain;
DROP FUNCTION audit_chain_append_only();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_event_hash(prev TEXT, e audit_events) RETURNS TEXT
LANGUAGE sql IMMUTABLE AS $$
    SELECT encode(sha256(convert_to(jsonb_build_array(
        prev, e.seq, to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        e.actor_kind, e.actor_id, e.actor_name, e.action, e.connector, e.tool, e.conversation_id,
        e.turn_id, e.playbook_id, e.run_id, e.approval_id, e.detail)::text, 'UTF8')), 'hex')
$$;
-- +goose StatementEnd
DROP FUNCTION audit_chain_hash(TEXT, BIGINT, audit_events);
