-- +goose Up
-- The audit chain moves off the request path. A request transaction inserts
-- its events unchained (seq, prev_hash and hash empty) and records its
-- transaction id; a sealer, one at a time (audit_seal takes a transaction
-- advisory lock and skips when another holds it), chains them afterwards.
-- It seals only events whose transaction id is below the horizon
-- pg_snapshot_xmin(pg_current_snapshot()): every transaction below it has
-- committed or aborted, so no later commit can add an event before them, and
-- sealing them in (xid, id) order gives one deterministic order whatever
-- the instances' clocks. Request transactions take no advisory lock.
ALTER TABLE audit_events ADD COLUMN xid xid8,
    ALTER COLUMN seq DROP NOT NULL, ALTER COLUMN prev_hash DROP NOT NULL, ALTER COLUMN hash DROP NOT NULL;
DROP TRIGGER audit_events_chain ON audit_events;
DROP FUNCTION audit_events_chain();

-- +goose StatementBegin
CREATE FUNCTION audit_events_unsealed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.seq := NULL;
    NEW.prev_hash := NULL;
    NEW.hash := NULL;
    NEW.xid := pg_current_xact_id();
    NEW.at := date_trunc('microseconds', NEW.at);
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_events_unsealed BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_events_unsealed();

-- Append-only, except for the seal itself: an unsealed event may receive its
-- chain fields once, and nothing else of it may change.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.seq IS NULL AND NEW.seq IS NOT NULL AND NEW.hash IS NOT NULL AND NEW.prev_hash IS NOT NULL
        AND (OLD.id, OLD.at, OLD.actor_kind, OLD.actor_id, OLD.actor_name, OLD.action, OLD.connector, OLD.tool,
             OLD.conversation_id, OLD.turn_id, OLD.playbook_id, OLD.run_id, OLD.approval_id, OLD.detail, OLD.xid)
        IS NOT DISTINCT FROM
            (NEW.id, NEW.at, NEW.actor_kind, NEW.actor_id, NEW.actor_name, NEW.action, NEW.connector, NEW.tool,
             NEW.conversation_id, NEW.turn_id, NEW.playbook_id, NEW.run_id, NEW.approval_id, NEW.detail, NEW.xid) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd

CREATE INDEX audit_events_unsealed_idx ON audit_events (xid, id) WHERE seq IS NULL;
-- Only sealed events are in the seq index: an insert adds no entry to it.
DROP INDEX audit_events_seq_idx;
CREATE UNIQUE INDEX audit_events_seq_idx ON audit_events (seq) WHERE seq IS NOT NULL;

-- audit_seal chains up to max_events sealable events and returns how many,
-- or -1 when another sealer holds the lock.
-- +goose StatementBegin
CREATE FUNCTION audit_seal(max_events INT) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    r audit_events;
    last_seq BIGINT;
    last_hash TEXT;
    horizon xid8;
    n BIGINT := 0;
BEGIN
    IF NOT pg_try_advisory_xact_lock(6582955728264977263) THEN
        RETURN -1;
    END IF;
    -- Taken before the events are read: everything below it has finished,
    -- and the read's own snapshot, taken later, sees every commit below it.
    horizon := pg_snapshot_xmin(pg_current_snapshot());
    SELECT seq, hash INTO last_seq, last_hash FROM audit_events WHERE seq IS NOT NULL ORDER BY seq DESC LIMIT 1;
    last_seq := COALESCE(last_seq, 0);
    last_hash := COALESCE(last_hash, repeat('0', 64));
    FOR r IN SELECT * FROM audit_events WHERE seq IS NULL AND xid < horizon ORDER BY xid, id LIMIT max_events LOOP
        last_seq := last_seq + 1;
        r.seq := last_seq;
        r.prev_hash := last_hash;
        r.hash := audit_event_hash(last_hash, r);
        UPDATE audit_events SET seq = r.seq, prev_hash = r.prev_hash, hash = r.hash WHERE id = r.id;
        last_hash := r.hash;
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;
-- +goose StatementEnd

-- +goose Down
SELECT audit_seal(2147483647);
DROP FUNCTION audit_seal(INT);
DROP INDEX audit_events_unsealed_idx;
DROP INDEX audit_events_seq_idx;
CREATE UNIQUE INDEX audit_events_seq_idx ON audit_events (seq);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd
DROP TRIGGER audit_events_unsealed ON audit_events;
DROP FUNCTION audit_events_unsealed();
-- +goose StatementBegin
CREATE FUNCTION audit_events_chain() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    last_seq BIGINT;
    last_hash TEXT;
BEGIN
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
CREATE TRIGGER audit_events_chain BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_events_chain();
ALTER TABLE audit_events DROP COLUMN xid;
