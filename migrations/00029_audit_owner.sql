-- +goose Up
-- Activity: every call event names the person whose agent made the call
-- (the conversation's owner, owner_subject), so that a member's Activity
-- page reads their own calls by one index, newest first, keyset-paged.
-- The column is an index of the log, not part of its content: it is not in
-- the chain's hash (audit_event_hash is unchanged, so every sealed line
-- verifies as before), and, like the content, it cannot change once
-- written — the seal may set only the chain's fields.
ALTER TABLE audit_events ADD COLUMN owner_subject TEXT NOT NULL DEFAULT '';

-- Lines written before this migration get their owner from what they name:
-- the item (approval_id), the standing grant (detail.grant_id) or the
-- playbook (its owner, for the calls of unattended runs). A refusal that
-- names none of them (blocked by policy, blocked after repeated rejections)
-- keeps no owner: it was not recorded.
ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete;
UPDATE audit_events e SET owner_subject = a.owner_subject
  FROM approvals a WHERE e.approval_id <> '' AND a.id::text = e.approval_id;
UPDATE audit_events e SET owner_subject = g.user_subject
  FROM standing_grants g
 WHERE e.owner_subject = '' AND e.action LIKE 'auto-approved by %' AND e.detail ? 'grant_id' AND jsonb_typeof(e.detail->'grant_id') = 'number'
   AND g.id = (e.detail->>'grant_id')::bigint;
UPDATE audit_events e SET owner_subject = p.owner_subject
  FROM playbooks p
 WHERE e.owner_subject = '' AND e.playbook_id = p.id
   AND e.action IN ('allowed by pre-approval', 'refused in unattended run');
ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete;

CREATE INDEX audit_events_owner_idx ON audit_events (owner_subject, id DESC) WHERE owner_subject <> '';

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
DROP INDEX audit_events_owner_idx;
ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete;
ALTER TABLE audit_events DROP COLUMN owner_subject;
ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete;
