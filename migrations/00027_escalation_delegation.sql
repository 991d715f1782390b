-- +goose Up
-- Escalation: a tool's rule may name a backup team and a delay. Each item
-- keeps the rule it was created under (escalate_to, escalate_after_seconds)
-- and when it escalates (escalate_at, computed once at creation). The sweep
-- sets escalated_at once, when the delay passed without an answer; from
-- then on the backup team may decide too. An escalation that would come at
-- or after the item's expiry is never due: the expiry wins.
ALTER TABLE tools
    ADD COLUMN escalate_to            TEXT NOT NULL DEFAULT '',
    ADD COLUMN escalate_after_seconds INTEGER CHECK (escalate_after_seconds > 0),
    ADD CONSTRAINT tools_escalation_whole CHECK ((escalate_to = '') = (escalate_after_seconds IS NULL));
ALTER TABLE approvals
    ADD COLUMN escalate_to            TEXT NOT NULL DEFAULT '',
    ADD COLUMN escalate_after_seconds INTEGER,
    ADD COLUMN escalate_at            TIMESTAMPTZ,
    ADD COLUMN escalated_at           TIMESTAMPTZ;
-- The index of items whose escalation is due (approvals_escalation_due_idx)
-- is built concurrently by 00034, not under this transaction's locks.

-- The rule is taken from the tool in the transaction that creates the item
-- (which holds the tool's policy), so that every writer of pending items
-- snapshots it without knowing about escalation.
-- +goose StatementBegin
CREATE FUNCTION approvals_snapshot_escalation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    SELECT t.escalate_to, t.escalate_after_seconds INTO NEW.escalate_to, NEW.escalate_after_seconds
        FROM tools t WHERE t.id = NEW.tool_id;
    NEW.escalate_to := COALESCE(NEW.escalate_to, '');
    NEW.escalate_at := NULL;
    NEW.escalated_at := NULL;
    IF NEW.escalate_to <> '' AND NEW.escalate_after_seconds IS NOT NULL THEN
        NEW.escalate_at := NEW.created_at + make_interval(secs => NEW.escalate_after_seconds);
        IF NEW.escalate_at >= NEW.expires_at THEN
            NEW.escalate_at := NULL;
        END IF;
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER approvals_snapshot_escalation BEFORE INSERT ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_snapshot_escalation();

-- Delegation while away: a person names one delegate (someone who has
-- signed in) until a time. During [starts_at, ends_at) and until it is
-- ended early, the delegate may decide the person's items. One open
-- delegation per person; a new one ends the previous. Both subjects are
-- kept beside the users' ids, so that the predicate finds a viewer's
-- delegations with one index probe per item.
CREATE TABLE delegations (
    id               BIGSERIAL PRIMARY KEY,
    person_id        BIGINT NOT NULL REFERENCES users (id),
    delegate_id      BIGINT NOT NULL REFERENCES users (id),
    person_subject   TEXT NOT NULL,
    delegate_subject TEXT NOT NULL,
    starts_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    ends_at     TIMESTAMPTZ NOT NULL,
    ended_at    TIMESTAMPTZ,
    ended_by    TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (person_id <> delegate_id AND person_subject <> delegate_subject),
    CHECK (ends_at > starts_at)
);
CREATE UNIQUE INDEX delegations_one_open_idx ON delegations (person_id) WHERE ended_at IS NULL;
CREATE INDEX delegations_delegate_idx ON delegations (delegate_subject, ends_at) WHERE ended_at IS NULL;

-- Who may decide, with escalation and delegation. The rule of 00026 stays
-- as it is, under its own name (countersign_may_decide_by_rule), and the
-- one predicate every read uses is rebuilt on top of it:
--   countersign_may_decide_self  by the item's rule, or as a member of the
--                                backup team once the item escalated (the
--                                owner still never counts in a quorum of
--                                more than one);
--   countersign_deciding_for     whose place the viewer decides in: the
--                                viewer's own when they may decide
--                                themselves, else the person who named
--                                them delegate, if a delegation holds now
--                                and that person may decide themselves (no
--                                chains: a delegate's delegate inherits
--                                nothing). Never for a quorum rule that
--                                already counts the delegate (a member of
--                                the rule's or the backup team, or the
--                                owner): one vote for the pair. A vote is
--                                recorded under the subject it returns, so
--                                a delegate's vote and the person's are the
--                                same vote;
--   countersign_may_decide       deciding_for is not NULL.
ALTER FUNCTION countersign_may_decide(approvals, TEXT) RENAME TO countersign_may_decide_by_rule;

-- +goose StatementBegin
CREATE FUNCTION countersign_may_decide_self(a approvals, viewer TEXT) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT countersign_may_decide_by_rule(a, viewer)
        OR (a.escalated_at IS NOT NULL AND a.escalate_to <> '' AND countersign_is_member(a.escalate_to, viewer)
            AND (a.deciders <> 'quorum' OR a.quorum = 1 OR a.owner_subject <> viewer))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION countersign_deciding_for(a approvals, viewer TEXT) RETURNS TEXT
LANGUAGE plpgsql STABLE AS $$
-- PL/pgSQL keeps its plans for the session; a SQL-language body with
-- nested calls was planned again for every item (twice as slow).
DECLARE
    person TEXT;
BEGIN
    IF COALESCE(viewer, '') = '' THEN
        RETURN NULL;
    END IF;
    IF countersign_may_decide_self(a, viewer) THEN
        RETURN viewer;
    END IF;
    IF a.owner_subject = viewer THEN
        RETURN NULL; -- the agent's owner never decides their own call in someone else's place
    END IF;
    IF a.deciders = 'quorum' AND (a.owner_subject = viewer OR countersign_is_member(a.decider_team, viewer)
        OR (a.escalate_to <> '' AND countersign_is_member(a.escalate_to, viewer))) THEN
        RETURN NULL; -- a quorum that counts the viewer: never for someone else
    END IF;
    FOR person IN SELECT d.person_subject FROM delegations d
        WHERE d.delegate_subject = viewer AND d.person_subject <> viewer
          AND d.ended_at IS NULL AND d.starts_at <= now() AND now() < d.ends_at
        ORDER BY d.id
    LOOP
        IF countersign_may_decide_self(a, person) THEN
            RETURN person;
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION countersign_may_decide(a approvals, viewer TEXT) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT countersign_deciding_for(a, viewer) IS NOT NULL
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION countersign_may_decide(approvals, TEXT);
DROP FUNCTION countersign_deciding_for(approvals, TEXT);
DROP FUNCTION countersign_may_decide_self(approvals, TEXT);
ALTER FUNCTION countersign_may_decide_by_rule(approvals, TEXT) RENAME TO countersign_may_decide;
DROP TABLE delegations;
DROP TRIGGER approvals_snapshot_escalation ON approvals;
DROP FUNCTION approvals_snapshot_escalation();
ALTER TABLE approvals DROP COLUMN escalated_at, DROP COLUMN escalate_at, DROP COLUMN escalate_after_seconds, DROP COLUMN escalate_to;
ALTER TABLE tools DROP CONSTRAINT tools_escalation_whole, DROP COLUMN escalate_after_seconds, DROP COLUMN escalate_to;
