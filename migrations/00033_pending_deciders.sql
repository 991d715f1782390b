-- +goose Up
-- Who may decide each waiting item, kept as rows, so that a viewer's inbox
-- and its count read the viewer's rows alone however many items wait for
-- others. A row (approval, subject) says the subject may decide the item
-- themselves (countersign_may_decide_self: by its rule, or in its backup
-- team once it escalated). The rule stays countersign_may_decide: a read
-- takes the rows of the viewer and of the people who named the viewer
-- their delegate now (delegations are resolved when read, so their start
-- and end need no write here), and asks the predicate of those items only.
-- The rows are written by triggers, in the transaction of the change that
-- moves them: an item created, decided, ended or escalated (or its rule
-- changed), and a team membership added or removed.
CREATE TABLE pending_deciders (
    subject     TEXT NOT NULL,
    approval_id UUID NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    PRIMARY KEY (subject, approval_id)
);
CREATE INDEX pending_deciders_approval_idx ON pending_deciders (approval_id);

-- The rows of one item: none unless it is pending; otherwise every
-- subject that may decide it themselves, among those its rule could name
-- (its owner and the members of its key's team, its rule's team and its
-- backup team), by the predicate itself.
-- +goose StatementBegin
CREATE FUNCTION countersign_item_deciders_refresh(p_id UUID) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    -- A membership change of one of these teams committing meanwhile
    -- would be seen by neither side: the teams are held (shared) until
    -- this commits, and a membership change holds its team exclusively.
    PERFORM 1 FROM teams t, approvals a WHERE a.id = p_id
        AND t.name IN (a.owner_team, a.decider_team, NULLIF(a.escalate_to, '')) ORDER BY t.name FOR SHARE OF t;
    DELETE FROM pending_deciders WHERE approval_id = p_id;
    INSERT INTO pending_deciders (subject, approval_id)
    SELECT DISTINCT s.subject, a.id
    FROM approvals a
    CROSS JOIN LATERAL (
        SELECT a.owner_subject AS subject WHERE a.owner_subject <> ''
        UNION SELECT m.subject FROM team_members m WHERE m.team IN (a.owner_team, a.decider_team, NULLIF(a.escalate_to, ''))
    ) s
    WHERE a.id = p_id AND a.status = 'pending' AND countersign_may_decide_self(a, s.subject);
END $$;
-- +goose StatementEnd

-- The rows of one subject for the items routed to one team (as its key's
-- team, its rule's team or its backup team), after that subject joined or
-- left it: taken again by the predicate, whatever else made them.
-- +goose StatementBegin
CREATE FUNCTION countersign_member_deciders_refresh(p_team TEXT, p_subject TEXT) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM teams WHERE name = p_team FOR NO KEY UPDATE;
    DELETE FROM pending_deciders pd USING approvals a
        WHERE pd.subject = p_subject AND pd.approval_id = a.id
          AND (a.owner_team = p_team OR a.decider_team = p_team OR a.escalate_to = p_team);
    INSERT INTO pending_deciders (subject, approval_id)
    SELECT p_subject, a.id FROM approvals a
        WHERE a.status = 'pending' AND (a.owner_team = p_team OR a.decider_team = p_team OR a.escalate_to = p_team)
          AND countersign_may_decide_self(a, p_subject)
    ON CONFLICT DO NOTHING;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION approvals_deciders_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM countersign_item_deciders_refresh(NEW.id);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER approvals_deciders_insert AFTER INSERT ON approvals
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION approvals_deciders_sync();
CREATE TRIGGER approvals_deciders_update AFTER UPDATE ON approvals
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.escalated_at IS DISTINCT FROM NEW.escalated_at
        OR OLD.escalate_to IS DISTINCT FROM NEW.escalate_to OR OLD.deciders IS DISTINCT FROM NEW.deciders
        OR OLD.decider_team IS DISTINCT FROM NEW.decider_team OR OLD.owner_team IS DISTINCT FROM NEW.owner_team
        OR OLD.owner_subject IS DISTINCT FROM NEW.owner_subject OR OLD.quorum IS DISTINCT FROM NEW.quorum)
    EXECUTE FUNCTION approvals_deciders_sync();

-- +goose StatementBegin
CREATE FUNCTION team_members_deciders_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        PERFORM countersign_member_deciders_refresh(OLD.team, OLD.subject);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM countersign_member_deciders_refresh(NEW.team, NEW.subject);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER team_members_deciders AFTER INSERT OR UPDATE OR DELETE ON team_members
    FOR EACH ROW EXECUTE FUNCTION team_members_deciders_sync();

-- The items waiting now.
INSERT INTO pending_deciders (subject, approval_id)
SELECT DISTINCT s.subject, a.id
FROM approvals a
CROSS JOIN LATERAL (
    SELECT a.owner_subject AS subject WHERE a.owner_subject <> ''
    UNION SELECT m.subject FROM team_members m WHERE m.team IN (a.owner_team, a.decider_team, NULLIF(a.escalate_to, ''))
) s
WHERE a.status = 'pending' AND countersign_may_decide_self(a, s.subject);

-- +goose Down
DROP TRIGGER team_members_deciders ON team_members;
DROP FUNCTION team_members_deciders_sync();
DROP TRIGGER approvals_deciders_update ON approvals;
DROP TRIGGER approvals_deciders_insert ON approvals;
DROP FUNCTION approvals_deciders_sync();
DROP FUNCTION countersign_member_deciders_refresh(TEXT, TEXT);
DROP FUNCTION countersign_item_deciders_refresh(UUID);
DROP TABLE pending_deciders;
