-- +goose Up
-- Tamper evidence: every audit event carries its position in the chain, the
-- previous event's hash and its own hash over its content and that previous
-- hash. Inserts take one advisory lock until commit, so the chain follows
-- commit order even with writers in many processes.
ALTER TABLE audit_events ADD COLUMN seq BIGINT, ADD COLUMN prev_hash TEXT, ADD COLUMN hash TEXT;

-- +goose StatementBegin
CREATE FUNCTION audit_event_hash(prev TEXT, e audit_events) RETURNS TEXT
LANGUAGE sql IMMUTABLE AS $$
    SELECT encode(sha256(convert_to(jsonb_build_array(
        prev, e.seq, to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        e.actor_kind, e.actor_id, e.actor_name, e.action, e.connector, e.tool, e.conversation_id,
        e.turn_id, e.playbook_id, e.run_id, e.approval_id, e.detail)::text, 'UTF8')), 'hex')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION audit_events_chain() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    last_seq BIGINT;
    last_hash TEXT;
BEGIN
    -- Held until commit: the next writer reads this row once it is committed.
    PERFORM pg_advisory_xact_lock(6582955728264977263);
    SELECT seq, hash INTO last_seq, last_hash FROM audit_events ORDER BY seq DESC LIMIT 1;
    NEW.seq := COALESCE(last_seq, 0) + 1;
    NEW.prev_hash := COALESCE(last_hash, repeat('0', 64));
    NEW.at := date_trunc('microseconds', NEW.at);
    NEW.hash := audit_event_hash(NEW.prev_hash, NEW);
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- Chain the events written before this migration, in id order.
ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete;
-- +goose StatementBegin
DO $$
DECLARE
    r audit_events;
    prev TEXT := repeat('0', 64);
    n BIGINT := 0;
BEGIN
    FOR r IN SELECT * FROM audit_events ORDER BY id LOOP
        n := n + 1;
        r.seq := n;
        r.prev_hash := prev;
        r.hash := audit_event_hash(prev, r);
        UPDATE audit_events SET seq = r.seq, prev_hash = r.prev_hash, hash = r.hash WHERE id = r.id;
        prev := r.hash;
    END LOOP;
END;
$$;
-- +goose StatementEnd
ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete;

ALTER TABLE audit_events ALTER COLUMN seq SET NOT NULL, ALTER COLUMN prev_hash SET NOT NULL, ALTER COLUMN hash SET NOT NULL;
CREATE UNIQUE INDEX audit_events_seq_idx ON audit_events (seq);
CREATE TRIGGER audit_events_chain BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_events_chain();

-- Filters of the audit screen, each ending in id for keyset paging.
CREATE INDEX audit_events_action_idx ON audit_events (action, id DESC);
CREATE INDEX audit_events_actor_idx ON audit_events (actor_id, id DESC);
CREATE INDEX audit_events_tool_idx ON audit_events (connector, tool, id DESC);
CREATE INDEX audit_events_conversation_idx ON audit_events (conversation_id, id DESC) WHERE conversation_id <> '';

-- Retention of previews: decided items lose their argument preview and the
-- agent's reason after a while; the digest, size and audit lines stay.
ALTER TABLE approvals ADD COLUMN preview_removed_at TIMESTAMPTZ;
CREATE INDEX approvals_preview_retention_idx ON approvals (decided_at) WHERE preview_removed_at IS NULL AND decided_at IS NOT NULL;

-- +goose Down
DROP INDEX approvals_preview_retention_idx;
ALTER TABLE approvals DROP COLUMN preview_removed_at;
DROP INDEX audit_events_conversation_idx;
DROP INDEX audit_events_tool_idx;
DROP INDEX audit_events_actor_idx;
DROP INDEX audit_events_action_idx;
DROP TRIGGER audit_events_chain ON audit_events;
DROP INDEX audit_events_seq_idx;
DROP FUNCTION audit_events_chain();
DROP FUNCTION audit_event_hash(TEXT, audit_events);
ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete;
ALTER TABLE audit_events DROP COLUMN seq, DROP COLUMN prev_hash, DROP COLUMN hash;
ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete;
