-- +goose NO TRANSACTION
-- +goose Up
-- Activity: every call event names the person whose agent made the call
-- (the conversation's owner, owner_subject), so that a member's Activity
-- page reads their own calls by one index, newest first, keyset-paged.
-- The column is an index of the log, not part of its content: it is not in
-- the chain's hash (audit_event_hash is unchanged, so every sealed line
-- verifies as before), and, like the content, it cannot change once
-- written — the seal may set only the chain's fields.
--
-- Online (docs/deployment.md, "Migrations"): the instances still serving
-- keep writing audit lines while this runs. The column comes with a
-- constant default (no rewrite), taken with a short lock timeout and
-- retried, so that it never queues the writers behind a long transaction;
-- the lines written before get their owner in batches of their own
-- transactions; the index is built concurrently; and VACUUM leaves no dead
-- lines behind. Each step may run again after an interruption.

-- +goose StatementBegin
DO $$
BEGIN
    FOR attempt IN 1..100 LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '200ms', true);
            ALTER TABLE audit_events ADD COLUMN IF NOT EXISTS owner_subject TEXT NOT NULL DEFAULT '';
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_sleep(0.1);
        END;
    END LOOP;
    RAISE EXCEPTION 'audit_events stayed locked by other transactions for 100 attempts; run the migration again';
END $$;
-- +goose StatementEnd

-- While the owners are filled in, the append-only rule lets a transaction
-- that says so (countersign.audit_owner_backfill) give an ownerless line
-- its owner, and change nothing else of it. The rule is strict again
-- below, once they are filled in.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.seq IS NULL AND NEW.seq IS NOT NULL AND NEW.hash IS NOT NULL AND NEW.prev_hash IS NOT NULL
        AND (OLD.id, OLD.at, OLD.actor_kind, OLD.actor_id, OLD.actor_name, OLD.action, OLD.connector, OLD.tool,
             OLD.conversation_id, OLD.turn_id, OLD.playbook_id, OLD.run_id, OLD.approval_id, OLD.detail, OLD.xid,
             OLD.owner_subject)
        IS NOT DISTINCT FROM
            (NEW.id, NEW.at, NEW.actor_kind, NEW.actor_id, NEW.actor_name, NEW.action, NEW.connector, NEW.tool,
             NEW.conversation_id, NEW.turn_id, NEW.playbook_id, NEW.run_id, NEW.approval_id, NEW.detail, NEW.xid,
             NEW.owner_subject) THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND current_setting('countersign.audit_owner_backfill', true) = 'on'
        AND OLD.owner_subject = '' AND NEW.owner_subject <> ''
        AND (OLD.id, OLD.at, OLD.actor_kind, OLD.actor_id, OLD.actor_name, OLD.action, OLD.connector, OLD.tool,
             OLD.conversation_id, OLD.turn_id, OLD.playbook_id, OLD.run_id, OLD.approval_id, OLD.detail, OLD.xid,
             OLD.seq, OLD.prev_hash, OLD.hash)
        IS NOT DISTINCT FROM
            (NEW.id, NEW.at, NEW.actor_kind, NEW.actor_id, NEW.actor_name, NEW.action, NEW.connector, NEW.tool,
             NEW.conversation_id, NEW.turn_id, NEW.playbook_id, NEW.run_id, NEW.approval_id, NEW.detail, NEW.xid,
             NEW.seq, NEW.prev_hash, NEW.hash) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd

-- Lines written before this migration get their owner from what they name:
-- the item (approval_id), the standing grant (detail.grant_id) or the
-- playbook (its owner, for the calls of unattended runs). A refusal (blocked
-- by policy, blocked after repeated rejections) names none of them; its
-- owner is known when the other lines of the same key's conversation name
-- one person, and is left empty otherwise. Each batch of ids is its own
-- transaction: a writer waits at most for one batch's row locks, never for
-- the whole log. Lines the previous release writes while this runs are
-- filled in too, up to the newest line when the batches reach it.
-- +goose StatementBegin
CREATE OR REPLACE PROCEDURE countersign_backfill_audit_owner(batch BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
    lo BIGINT;
    top BIGINT;
    caught_up BOOLEAN := false;
    filled BIGINT;
    total BIGINT := 0;
    last_note TIMESTAMPTZ := clock_timestamp();
BEGIN
    SELECT COALESCE(min(id), 1), COALESCE(max(id), 0) INTO lo, top FROM audit_events;
    RAISE NOTICE 'audit owners: filling in lines % to %, % at a time', lo, top, batch;
    LOOP
        IF lo > top THEN
            EXIT WHEN caught_up;
            caught_up := true;
            SELECT COALESCE(max(id), 0) INTO top FROM audit_events;
            CONTINUE;
        END IF;
        PERFORM set_config('countersign.audit_owner_backfill', 'on', true);
        UPDATE audit_events e SET owner_subject = a.owner_subject
          FROM approvals a
         WHERE e.id >= lo AND e.id < lo + batch AND e.owner_subject = '' AND e.approval_id <> ''
           AND a.id = (CASE WHEN e.approval_id ~ '^[0-9a-fA-F-]{36}$' THEN e.approval_id::uuid END)
           AND a.owner_subject <> '';
        GET DIAGNOSTICS filled = ROW_COUNT;
        total := total + filled;
        UPDATE audit_events e SET owner_subject = g.user_subject
          FROM standing_grants g
         WHERE e.id >= lo AND e.id < lo + batch AND e.owner_subject = ''
           AND e.action LIKE 'auto-approved by %' AND jsonb_typeof(e.detail->'grant_id') = 'number'
           AND g.id = (e.detail->>'grant_id')::bigint AND g.user_subject <> '';
        GET DIAGNOSTICS filled = ROW_COUNT;
        total := total + filled;
        UPDATE audit_events e SET owner_subject = p.owner_subject
          FROM playbooks p
         WHERE e.id >= lo AND e.id < lo + batch AND e.owner_subject = '' AND e.playbook_id = p.id
           AND e.action IN ('allowed by pre-approval', 'refused in unattended run') AND p.owner_subject <> '';
        GET DIAGNOSTICS filled = ROW_COUNT;
        total := total + filled;
        COMMIT;
        lo := lo + batch;
        IF clock_timestamp() - last_note > interval '5 seconds' THEN
            RAISE NOTICE 'audit owners: % lines filled in, up to line % of %', total, lo - 1, top;
            last_note := clock_timestamp();
        END IF;
    END LOOP;
    -- Refusals, once every other line has its owner: found by their action
    -- (its index), batch by batch.
    lo := 0;
    LOOP
        PERFORM set_config('countersign.audit_owner_backfill', 'on', true);
        WITH refusals AS (
            SELECT r.id, r.actor_id, r.conversation_id FROM audit_events r
             WHERE r.action IN ('blocked by policy', 'blocked after repeated rejections') AND r.owner_subject = '' AND r.id > lo
             ORDER BY r.id LIMIT batch
        ), conversations AS (
            -- Each conversation of the batch once, read by its index.
            SELECT c.actor_id, c.conversation_id, o.owner_subject
              FROM (SELECT DISTINCT actor_id, conversation_id FROM refusals WHERE conversation_id <> '') c
             CROSS JOIN LATERAL (
                SELECT min(x.owner_subject) AS owner_subject, count(DISTINCT x.owner_subject) AS people
                  FROM audit_events x
                 WHERE x.conversation_id = c.conversation_id AND x.conversation_id <> '' -- (the index's predicate)
                   AND x.actor_id = c.actor_id AND x.owner_subject <> '') o
             WHERE o.people = 1
        ), filled AS (
            UPDATE audit_events e SET owner_subject = c.owner_subject
              FROM refusals r JOIN conversations c ON c.actor_id = r.actor_id AND c.conversation_id = r.conversation_id
             WHERE e.id = r.id AND e.owner_subject = ''
            RETURNING e.id
        )
        SELECT (SELECT max(id) FROM refusals), (SELECT count(*) FROM filled) INTO top, filled;
        COMMIT;
        EXIT WHEN top IS NULL;
        total := total + filled;
        lo := top;
    END LOOP;
    RAISE NOTICE 'audit owners: % lines filled in', total;
END $$;
-- +goose StatementEnd

CALL countersign_backfill_audit_owner(5000);
DROP PROCEDURE countersign_backfill_audit_owner(BIGINT);

-- The append-only rule, strict again: owner_subject is content too.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.seq IS NULL AND NEW.seq IS NOT NULL AND NEW.hash IS NOT NULL AND NEW.prev_hash IS NOT NULL
        AND (OLD.id, OLD.at, OLD.actor_kind, OLD.actor_id, OLD.actor_name, OLD.action, OLD.connector, OLD.tool,
             OLD.conversation_id, OLD.turn_id, OLD.playbook_id, OLD.run_id, OLD.approval_id, OLD.detail, OLD.xid,
             OLD.owner_subject)
        IS NOT DISTINCT FROM
            (NEW.id, NEW.at, NEW.actor_kind, NEW.actor_id, NEW.actor_name, NEW.action, NEW.connector, NEW.tool,
             NEW.conversation_id, NEW.turn_id, NEW.playbook_id, NEW.run_id, NEW.approval_id, NEW.detail, NEW.xid,
             NEW.owner_subject) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd

-- The batches' old row versions go now, not at autovacuum's next visit.
VACUUM (ANALYZE) audit_events;

-- An index left invalid by an interrupted run is built again.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE c.relname = 'audit_events_owner_idx' AND NOT i.indisvalid) THEN
        DROP INDEX audit_events_owner_idx;
    END IF;
END $$;
-- +goose StatementEnd
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_events_owner_idx ON audit_events (owner_subject, id DESC) WHERE owner_subject <> '';

-- +goose Down
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
DROP INDEX CONCURRENTLY IF EXISTS audit_events_owner_idx;
ALTER TABLE audit_events DROP COLUMN IF EXISTS owner_subject;
