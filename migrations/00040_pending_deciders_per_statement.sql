-- +goose Up
-- The "who may decide" rows of new items (pending_deciders, migration
-- 00033) are written once per INSERT statement instead of once per item.
-- The check writes the items of concurrent checks in one statement (the
-- group writer); a trigger per item ran three statements for each of them
-- (the teams held, a delete, an insert), which made it most of a pending
-- item's cost in the database. The rows are the same: every subject that
-- may decide the new item themselves, by the predicate itself, in the
-- transaction that creates it. The teams the new items are routed to are
-- held (shared) in one order, as before for one item, so that a
-- membership change committing meanwhile is seen by one side.
--
-- Online: replacing one trigger with another in one transaction holds the
-- table's lock for an instant, and no row is written.

-- +goose StatementBegin
CREATE FUNCTION approvals_new_deciders_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM teams t
        WHERE t.name IN (SELECT v.team FROM new_items a,
            LATERAL (VALUES (a.owner_team), (a.decider_team), (NULLIF(a.escalate_to, ''))) AS v(team)
            WHERE a.status = 'pending')
        ORDER BY t.name FOR SHARE OF t;
    INSERT INTO pending_deciders (subject, approval_id)
    SELECT DISTINCT s.subject, a.id
    FROM new_items a
    CROSS JOIN LATERAL (
        SELECT a.owner_subject AS subject WHERE a.owner_subject <> ''
        UNION SELECT m.subject FROM team_members m WHERE m.team IN (a.owner_team, a.decider_team, NULLIF(a.escalate_to, ''))
    ) s
    WHERE a.status = 'pending' AND countersign_may_decide_self(a, s.subject);
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER approvals_deciders_insert_rows AFTER INSERT ON approvals
    REFERENCING NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION approvals_new_deciders_sync();
DROP TRIGGER approvals_deciders_insert ON approvals;

-- +goose Down
CREATE TRIGGER approvals_deciders_insert AFTER INSERT ON approvals
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION approvals_deciders_sync();
DROP TRIGGER approvals_deciders_insert_rows ON approvals;
DROP FUNCTION approvals_new_deciders_sync();
