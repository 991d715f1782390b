-- +goose Up
-- The seal is written into a table of its own, audit_chain, instead of
-- onto the event's row. Sealing an event used to UPDATE its row in
-- audit_events: a change of an indexed column (seq), so never a HOT
-- update — a second copy of the row, an entry in each of the table's nine
-- indexes, the append-only trigger comparing every column, and a dead row
-- for vacuum to clear, all for every line. Measured on the policy allow
-- path, that UPDATE was a quarter of Postgres's time per check. An INSERT
-- of a narrow row with two indexes does the same job.
--
-- audit_chain holds, for every sealed event, its place in the chain (seq),
-- the previous event's hash and its own; event_xid and event_id are the
-- event's transaction id and id, the order it was sealed in, so the chain's
-- last row tells the sealer where to go on from. The chain of events sealed
-- before this migration is copied over whole: from now on audit_chain is
-- the only place a seal is read from. The columns seq, prev_hash and hash
-- of audit_events keep the old values and are no longer written; new events
-- keep seq NULL, so the index of unsealed events (xid, id WHERE seq IS NULL)
-- holds every new event, and the sealer reads it from its last sealed
-- (xid, id) on.
--
-- Online: the copy takes the sealer's lock first, so no seal runs while it
-- copies; writers of new events are not held. The hash is unchanged: an
-- event's hash covers its seq, prev hash and content as before, so the
-- checkpoints and receipts already given out verify the same.
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

SELECT pg_advisory_xact_lock(6582955728264977263);
INSERT INTO audit_chain (seq, event_id, event_xid, prev_hash, hash)
SELECT seq, id, xid, prev_hash, hash FROM audit_events WHERE seq IS NOT NULL ORDER BY seq;

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

-- The events waiting for their seal: those after the chain's last event in
-- (xid, id) order. Every event sealed so far comes before it, and every
-- event after it is unsealed, because events are sealed in that order and
-- only below the snapshot horizon (migration 00010). Events sealed before
-- migration 00010 have no xid: while the last sealed event is one of them,
-- every event the index of unsealed events holds (seq IS NULL) waits. The
-- chain's last event is read once, as a constant of the statement, so the
-- events are read as a range of that index. The view's columns are
-- audit_events' as of now: a migration that adds one recreates the view.
CREATE VIEW audit_unsealed AS
SELECT e.* FROM audit_events e
WHERE e.seq IS NULL
  AND (e.xid, e.id) > (SELECT COALESCE((SELECT c.event_xid FROM audit_chain c ORDER BY c.seq DESC LIMIT 1), '0'::xid8),
                              COALESCE((SELECT c.event_id FROM audit_chain c ORDER BY c.seq DESC LIMIT 1), 0));

-- The sealer: as migration 00020's, writing the seals into audit_chain.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_seal(max_events INT) RETURNS BIGINT
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    r audit_events;
    last_seq BIGINT;
    last_hash TEXT;
    horizon xid8;
    seqs BIGINT[] := '{}';
    ids BIGINT[] := '{}';
    xids xid8[] := '{}';
    prevs TEXT[] := '{}';
    hashes TEXT[] := '{}';
BEGIN
    IF NOT pg_try_advisory_xact_lock(6582955728264977263) THEN
        RETURN -1;
    END IF;
    -- Taken before the events are read: everything below it has finished,
    -- and the read's own snapshot, taken later, sees every commit below it.
    horizon := pg_snapshot_xmin(pg_current_snapshot());
    SELECT seq, hash INTO last_seq, last_hash FROM audit_chain ORDER BY seq DESC LIMIT 1;
    last_seq := COALESCE(last_seq, 0);
    last_hash := COALESCE(last_hash, repeat('0', 64));
    FOR r IN SELECT * FROM audit_unsealed WHERE xid < horizon ORDER BY xid, id LIMIT max_events LOOP
        last_seq := last_seq + 1;
        seqs := seqs || last_seq;
        ids := ids || r.id;
        xids := xids || r.xid;
        prevs := prevs || last_hash;
        last_hash := audit_chain_hash(last_hash, last_seq, r);
        hashes := hashes || last_hash;
    END LOOP;
    -- A second sealer's chain would collide on seq or on the event.
    INSERT INTO audit_chain (seq, event_id, event_xid, prev_hash, hash)
    SELECT * FROM unnest(seqs, ids, xids, prevs, hashes);
    RETURN cardinality(ids);
END;
$$;
-- +goose StatementEnd

-- Append-only, except for the key backfill of migration 00031: a line
-- without a key may receive the key it names itself, once. The seal no
-- longer writes the line, so no change of seq, prev_hash or hash is let
-- through: setting seq would take an event out of the index the sealer
-- reads, and so out of the chain.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.api_key_id IS NULL AND NEW.api_key_id IS NOT NULL
        AND (OLD.id, OLD.at, OLD.actor_kind, OLD.actor_id, OLD.actor_name, OLD.action, OLD.connector, OLD.tool,
             OLD.conversation_id, OLD.turn_id, OLD.playbook_id, OLD.run_id, OLD.approval_id, OLD.detail, OLD.xid,
             OLD.owner_subject, OLD.seq, OLD.prev_hash, OLD.hash)
        IS NOT DISTINCT FROM
            (NEW.id, NEW.at, NEW.actor_kind, NEW.actor_id, NEW.actor_name, NEW.action, NEW.connector, NEW.tool,
             NEW.conversation_id, NEW.turn_id, NEW.playbook_id, NEW.run_id, NEW.approval_id, NEW.detail, NEW.xid,
             NEW.owner_subject, NEW.seq, NEW.prev_hash, NEW.hash)
        AND NEW.api_key_id = audit_event_key(OLD) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd


-- +goose Down
DROP VIEW audit_unsealed;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_seal(max_events INT) RETURNS BIGINT
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    r audit_events;
    last_seq BIGINT;
    last_hash TEXT;
    horizon xid8;
    ids BIGINT[] := '{}';
    hashes TEXT[] := '{}';
    first_seq BIGINT;
    first_hash TEXT;
    written BIGINT;
BEGIN
    IF NOT pg_try_advisory_xact_lock(6582955728264977263) THEN
        RETURN -1;
    END IF;
    horizon := pg_snapshot_xmin(pg_current_snapshot());
    SELECT seq, hash INTO last_seq, last_hash FROM audit_events WHERE seq IS NOT NULL ORDER BY seq DESC LIMIT 1;
    last_seq := COALESCE(last_seq, 0);
    last_hash := COALESCE(last_hash, repeat('0', 64));
    first_seq := last_seq;
    first_hash := last_hash;
    FOR r IN SELECT * FROM audit_events WHERE seq IS NULL AND xid < horizon ORDER BY xid, id LIMIT max_events LOOP
        last_seq := last_seq + 1;
        r.seq := last_seq;
        r.prev_hash := last_hash;
        r.hash := audit_event_hash(last_hash, r);
        ids := ids || r.id;
        hashes := hashes || r.hash;
        last_hash := r.hash;
    END LOOP;
    UPDATE audit_events e SET seq = first_seq + u.n, hash = u.hash,
           prev_hash = COALESCE(hashes[u.n - 1], first_hash)
      FROM unnest(ids, hashes) WITH ORDINALITY AS u(id, hash, n)
     WHERE e.id = u.id AND e.seq IS NULL;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written <> cardinality(ids) THEN
        RAISE EXCEPTION 'audit_seal: % of % events were still unsealed', written, cardinality(ids);
    END IF;
    RETURN cardinality(ids);
END;
$$;
-- +goose StatementEnd
-- Seals written since the migration go back onto their events.
ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete;
UPDATE audit_events e SET seq = c.seq, prev_hash = c.prev_hash, hash = c.hash
  FROM audit_chain c WHERE c.event_id = e.id AND e.seq IS NULL;
ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete;
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
-- The append-only rule of migration 00031, seal included.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.seq IS NULL AND NEW.seq IS NOT NULL AND NEW.hash IS NOT NULL AND NEW.prev_hash IS NOT NULL
        AND (OLD.id, OLD.at, OLD.actor_kind, OLD.actor_id, OLD.actor_name, OLD.action, OLD.connector, OLD.tool,
             OLD.conversation_id, OLD.turn_id, OLD.playbook_id, OLD.run_id, OLD.approval_id, OLD.detail, OLD.xid,
             OLD.owner_subject, OLD.api_key_id)
        IS NOT DISTINCT FROM
            (NEW.id, NEW.at, NEW.actor_kind, NEW.actor_id, NEW.actor_name, NEW.action, NEW.connector, NEW.tool,
             NEW.conversation_id, NEW.turn_id, NEW.playbook_id, NEW.run_id, NEW.approval_id, NEW.detail, NEW.xid,
             NEW.owner_subject, NEW.api_key_id) THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.api_key_id IS NULL AND NEW.api_key_id IS NOT NULL
        AND (OLD.id, OLD.at, OLD.actor_kind, OLD.actor_id, OLD.actor_name, OLD.action, OLD.connector, OLD.tool,
             OLD.conversation_id, OLD.turn_id, OLD.playbook_id, OLD.run_id, OLD.approval_id, OLD.detail, OLD.xid,
             OLD.owner_subject, OLD.seq, OLD.prev_hash, OLD.hash)
        IS NOT DISTINCT FROM
            (NEW.id, NEW.at, NEW.actor_kind, NEW.actor_id, NEW.actor_name, NEW.action, NEW.connector, NEW.tool,
             NEW.conversation_id, NEW.turn_id, NEW.playbook_id, NEW.run_id, NEW.approval_id, NEW.detail, NEW.xid,
             NEW.owner_subject, NEW.seq, NEW.prev_hash, NEW.hash)
        AND NEW.api_key_id = audit_event_key(OLD) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd
