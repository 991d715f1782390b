-- +goose Up
-- The sealer's write-back is planned afresh at every seal. A plan kept
-- for the session was made when the sealer first ran, often on a nearly
-- empty table, and then joined every later seal against a scan of the
-- whole table: at 40,000 events, 10-25 ms per seal, growing with the
-- table until autovacuum's next ANALYZE. Planned with the table's current
-- size, a seal looks its events up by id. The write-back also touches only
-- unsealed rows, which lets the planner read them from the index of
-- unsealed events, and fails the seal if any of its lines was sealed
-- meanwhile.
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
    -- Taken before the events are read: everything below it has finished,
    -- and the read's own snapshot, taken later, sees every commit below it.
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
    -- Event u.n gets seq first_seq + n; its previous hash is event n-1's,
    -- or the head's for the first.
    UPDATE audit_events e SET seq = first_seq + u.n, hash = u.hash,
           prev_hash = COALESCE(hashes[u.n - 1], first_hash)
      FROM unnest(ids, hashes) WITH ORDINALITY AS u(id, hash, n)
     WHERE e.id = u.id AND e.seq IS NULL;
    -- Only a sealer holding the lock seals; a line sealed meanwhile would
    -- mean two chains.
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written <> cardinality(ids) THEN
        RAISE EXCEPTION 'audit_seal: % of % events were still unsealed', written, cardinality(ids);
    END IF;
    RETURN cardinality(ids);
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_seal(max_events INT) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    r audit_events;
    last_seq BIGINT;
    last_hash TEXT;
    horizon xid8;
    ids BIGINT[] := '{}';
    hashes TEXT[] := '{}';
    first_seq BIGINT;
    first_hash TEXT;
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
    -- Event u.n gets seq first_seq + n; its previous hash is event n-1's,
    -- or the head's for the first.
    UPDATE audit_events e SET seq = first_seq + u.n, hash = u.hash,
           prev_hash = COALESCE(hashes[u.n - 1], first_hash)
      FROM unnest(ids, hashes) WITH ORDINALITY AS u(id, hash, n) WHERE e.id = u.id;
    RETURN cardinality(ids);
END;
$$;
-- +goose StatementEnd
