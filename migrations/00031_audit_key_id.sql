-- +goose NO TRANSACTION
-- +goose Up
-- Identity, not names: every audit line about a call records the id of the
-- API key whose agent made it (api_key_id), and everything that joins a
-- line to a key (Activity's scope, its agent filter) joins by that id —
-- never by the key's name, which two teams' keys may share and which a new
-- key may take over from a revoked one.
--
-- Online: this migration runs outside one transaction. Adding a nullable
-- column without a default and replacing functions hold the table's lock
-- for an instant; the backfill of existing lines then runs in batches of
-- ids, each committed on its own, so checks and decisions keep writing
-- their lines meanwhile.
ALTER TABLE audit_events ADD COLUMN api_key_id BIGINT;

-- The key a line is about, from what the line itself names: the line's
-- actor when a key made the call, else the key of the item the line is
-- about. NULL when the line names neither. The one home of that rule: the
-- insert trigger, the backfill and the append-only check all use it.
-- +goose StatementBegin
CREATE FUNCTION audit_event_key(e audit_events) RETURNS BIGINT
LANGUAGE plpgsql STABLE AS $$
-- PL/pgSQL keeps its plan for the session: the insert trigger and the
-- backfill call it once a line.
BEGIN
    IF e.actor_kind = 'api_key' AND e.actor_id ~ '^[0-9]{1,18}$' THEN
        RETURN e.actor_id::bigint;
    END IF;
    IF e.approval_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
        RETURN (SELECT a.api_key_id FROM approvals a WHERE a.id = e.approval_id::uuid);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- A new line gets its key when its writer did not give one, so that every
-- writer (an instance of the previous release too, during a rolling
-- upgrade) records it.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_events_unsealed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.seq := NULL;
    NEW.prev_hash := NULL;
    NEW.hash := NULL;
    NEW.xid := pg_current_xact_id();
    NEW.at := date_trunc('microseconds', NEW.at);
    IF NEW.api_key_id IS NULL THEN
        NEW.api_key_id := audit_event_key(NEW);
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- Append-only, except for the seal and for this backfill: a line may
-- receive its chain fields once; a line without a key may receive the key
-- it names itself (audit_event_key), once. Nothing else of a line may
-- change. Like owner_subject, the key id is an index of the log, not part of
-- its content: it is not in the chain's hash.
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

-- The backfill, in batches of 5,000 ids, each its own transaction: no lock
-- on the table beyond the rows of one batch, no write waits on it.
-- +goose StatementBegin
DO $$
DECLARE
    lo BIGINT := 0;
    top BIGINT;
BEGIN
    SELECT COALESCE(max(id), 0) INTO top FROM audit_events;
    WHILE lo < top LOOP
        UPDATE audit_events e SET api_key_id = k.key
          FROM (SELECT x.id, audit_event_key(x) AS key FROM audit_events x
                 WHERE x.id > lo AND x.id <= lo + 5000 AND x.api_key_id IS NULL) k
         WHERE e.id = k.id AND k.key IS NOT NULL;
        COMMIT;
        lo := lo + 5000;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- The backfill's old row versions are dead: vacuum them now (no lock that
-- stops a write), rather than leave the table bloated until autovacuum.
VACUUM (ANALYZE) audit_events;

CREATE INDEX CONCURRENTLY audit_events_api_key_idx ON audit_events (api_key_id, id DESC) WHERE api_key_id IS NOT NULL;

-- Votes: which approvals counted. A quorum item's decision records, on each
-- vote, whether it counted when the quorum was met (counted), so that the
-- claim's decided_by and the request page name exactly those people — not
-- a vote of someone who left the team before it was met, nor a vote cast
-- without a passkey once the item needed one. NULL on votes of items
-- decided before this migration: read as the rule says now.
ALTER TABLE approval_votes ADD COLUMN counted BOOLEAN;

-- countersign_vote_paired says whether vote v on item a is paired with an
-- earlier approval of a that counts in its own right, by the person v's
-- voter stands in for or by that person's delegate (a delegation between
-- the two in force at some time between the two votes). Invariant 15: a
-- delegate never counts beside the person they stand in for, in any
-- capacity — also as a member of the rule's or the backup team. The
-- earlier vote is the pair's one vote.
-- +goose StatementBegin
CREATE FUNCTION countersign_vote_paired(a approvals, v approval_votes) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM approval_votes w JOIN delegations d
            ON (d.person_subject = w.subject AND d.delegate_subject = v.subject)
            OR (d.person_subject = v.subject AND d.delegate_subject = w.subject)
        WHERE w.approval = v.approval AND w.subject <> v.subject AND w.decision = 'approve'
          AND (w.at, w.subject) < (v.at, v.subject)
          AND countersign_may_decide_self(a, w.subject) AND (a.proof_required <> 'passkey' OR w.with_proof)
          AND d.starts_at <= GREATEST(v.at, w.at) AND COALESCE(d.ended_at, d.ends_at) > LEAST(v.at, w.at))
$$;
-- +goose StatementEnd

-- countersign_vote_counts is the one rule of whether an approval counts
-- towards item a's quorum: its voter may still decide the item in their
-- own right (a delegate's vote is under the person's subject), it carries
-- a passkey once the item needs one, and it is not paired with another.
-- +goose StatementBegin
CREATE FUNCTION countersign_vote_counts(a approvals, v approval_votes) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT v.decision = 'approve' AND countersign_may_decide_self(a, v.subject)
        AND (a.proof_required <> 'passkey' OR v.with_proof)
        AND NOT countersign_vote_paired(a, v)
$$;
-- +goose StatementEnd

-- Key names are unique per owner (the key's team, else the person who made
-- it, else the command line) among keys that stand; a revoked key's name may
-- be given again. Keys that share a name today keep the oldest's name; each
-- other gets a visible suffix (its id), and an audit line says so.
-- +goose StatementBegin
DO $$
DECLARE
    r RECORD;
BEGIN
    FOR r IN SELECT id, name, name || ' (#' || id || ')' AS renamed FROM (
            SELECT id, name, row_number() OVER (PARTITION BY COALESCE('team:' || team, 'person:' || created_by::text, 'cli'), name
                ORDER BY id) AS n
            FROM api_keys WHERE revoked_at IS NULL) d
        WHERE n > 1 ORDER BY id LOOP
        UPDATE api_keys SET name = r.renamed WHERE id = r.id;
        INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, detail, api_key_id)
        VALUES ('system', 'system', 'system', 'api key renamed',
            jsonb_build_object('key_id', r.id, 'key_name', r.renamed, 'old_name', r.name,
                'reason', 'another key of the same owner had this name'), r.id);
    END LOOP;
END;
$$;
-- +goose StatementEnd
CREATE UNIQUE INDEX api_keys_name_per_owner ON api_keys (COALESCE('team:' || team, 'person:' || created_by::text, 'cli'), name)
    WHERE revoked_at IS NULL;

-- +goose Down
DROP FUNCTION countersign_vote_counts(approvals, approval_votes);
DROP FUNCTION countersign_vote_paired(approvals, approval_votes);
ALTER TABLE approval_votes DROP COLUMN counted;
DROP INDEX api_keys_name_per_owner;
DROP INDEX audit_events_api_key_idx;
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
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_events_unsealed() RETURNS trigger
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
DROP FUNCTION audit_event_key(audit_events);
ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete;
ALTER TABLE audit_events DROP COLUMN api_key_id;
ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete;
