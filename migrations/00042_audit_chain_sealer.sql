-- +goose Up
-- The sealer writes into audit_chain (migration 00041). Under the sealer's
-- lock, so that no seal runs meanwhile: the seals made so far are copied
-- over whole, from now on audit_chain is the only place a seal is read
-- from; the queue loses the lines sealed onto their rows since 00041 and
-- gains the lines still waiting from before it. Writers of new lines are
-- not held (the lines they write enter the queue by 00041's trigger). The
-- columns seq, prev_hash and hash of audit_events keep the old values and
-- are no longer written. The hash is unchanged: a line's hash covers its
-- place, the previous hash and its content as before, so the checkpoints
-- and receipts already given out verify the same.
SELECT pg_advisory_xact_lock(6582955728264977263);
INSERT INTO audit_chain (seq, event_id, event_xid, prev_hash, hash)
SELECT seq, id, xid, prev_hash, hash FROM audit_events WHERE seq IS NOT NULL ORDER BY seq;
DELETE FROM audit_pending p USING audit_events e WHERE e.id = p.id AND e.xid = p.xid AND e.seq IS NOT NULL;
INSERT INTO audit_pending (xid, id)
SELECT e.xid, e.id FROM audit_events e
WHERE e.seq IS NULL AND e.xid IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM audit_pending p WHERE p.xid = e.xid AND p.id = e.id);

-- The lines waiting for their seal, each looked up by its id (the
-- subquery is kept apart, OFFSET 0, so that the few lines of the queue are
-- never joined by a scan of the whole log). The view's columns are
-- audit_events' as of now: a migration that adds one recreates the view.
CREATE VIEW audit_unsealed AS
SELECT e.* FROM audit_pending p CROSS JOIN LATERAL (SELECT * FROM audit_events l WHERE l.id = p.id OFFSET 0) e;

-- The sealer: as migration 00020's, reading the queue and writing the
-- seals into audit_chain. Lines are sealed in (xid, id) order below the
-- snapshot horizon (migration 00010), so that the order is final when it
-- is given. A line whose transaction id is past any this cluster had given
-- out when the read's snapshot was taken (its xmax) cannot be one of this
-- cluster's, since the read sees only lines committed before it: it was
-- written in another cluster (a database restored from a dump) and has
-- committed, so it is sealed too.
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
    -- Taken before the lines are read: everything below it has finished,
    -- and the read's own snapshot, taken later, sees every commit below it.
    horizon := pg_snapshot_xmin(pg_current_snapshot());
    SELECT seq, hash INTO last_seq, last_hash FROM audit_chain ORDER BY seq DESC LIMIT 1;
    last_seq := COALESCE(last_seq, 0);
    last_hash := COALESCE(last_hash, repeat('0', 64));
    -- Each part is read in the queue's order and stops at max_events.
    FOR r IN SELECT e.* FROM (
            (SELECT p.xid, p.id FROM audit_pending p WHERE p.xid < horizon ORDER BY p.xid, p.id LIMIT max_events)
            UNION ALL
            (SELECT p.xid, p.id FROM audit_pending p WHERE p.xid >= pg_snapshot_xmax(pg_current_snapshot())
                ORDER BY p.xid, p.id LIMIT max_events)
            ORDER BY 1, 2 LIMIT max_events) q
        CROSS JOIN LATERAL (SELECT * FROM audit_events l WHERE l.id = q.id OFFSET 0) e
        ORDER BY q.xid, q.id LOOP
        last_seq := last_seq + 1;
        seqs := seqs || last_seq;
        ids := ids || r.id;
        xids := xids || r.xid;
        prevs := prevs || last_hash;
        last_hash := audit_chain_hash(last_hash, last_seq, r);
        hashes := hashes || last_hash;
    END LOOP;
    -- A second sealer's chain would collide on seq or on the line.
    INSERT INTO audit_chain (seq, event_id, event_xid, prev_hash, hash)
    SELECT * FROM unnest(seqs, ids, xids, prevs, hashes);
    DELETE FROM audit_pending p USING unnest(xids, ids) AS u(xid, id) WHERE p.xid = u.xid AND p.id = u.id;
    RETURN cardinality(ids);
END;
$$;
-- +goose StatementEnd

-- Append-only, except for the key backfill of migration 00031: a line
-- without a key may receive the key it names itself, once. The seal no
-- longer writes the line, so no change of seq, prev_hash or hash is let
-- through: those columns are where the previous release read seals, and a
-- line marked sealed there would look sealed to it without being in the
-- chain.
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
-- The seals go back onto their lines, under the sealer's lock.
SELECT pg_advisory_xact_lock(6582955728264977263);
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
ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete;
UPDATE audit_events e SET seq = c.seq, prev_hash = c.prev_hash, hash = c.hash
  FROM audit_chain c WHERE c.event_id = e.id AND e.seq IS NULL;
ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete;
DELETE FROM audit_pending;
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
