-- +goose Up
-- Lists of items (the inbox, its count, recent decisions) first narrow the
-- rows to those a viewer could possibly decide, by columns that indexes
-- answer, and only then ask the one predicate (countersign_may_decide),
-- which stays the rule. Whoever may decide an item is, by the rule, its
-- owner or a member of its rule's team, its key's team or its backup team
-- — either the viewer or someone whose delegate the viewer is now.

-- The viewer and the people who named the viewer their delegate now.
-- +goose StatementBegin
CREATE FUNCTION countersign_viewer_people(viewer TEXT) RETURNS SETOF TEXT
LANGUAGE sql STABLE AS $$
    SELECT viewer WHERE COALESCE(viewer, '') <> ''
    UNION
    SELECT d.person_subject FROM delegations d
        WHERE d.delegate_subject = viewer AND d.ended_at IS NULL AND d.starts_at <= now() AND now() < d.ends_at
$$;
-- +goose StatementEnd

-- Their teams.
-- +goose StatementBegin
CREATE FUNCTION countersign_viewer_teams(viewer TEXT) RETURNS SETOF TEXT
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT m.team FROM team_members m WHERE m.subject IN (SELECT countersign_viewer_people(viewer))
$$;
-- +goose StatementEnd

-- The index of pending items by backup team (approvals_escalate_to_pending_idx)
-- is built concurrently by 00034.

-- +goose Down
DROP INDEX IF EXISTS approvals_escalate_to_pending_idx;
DROP FUNCTION countersign_viewer_teams(TEXT);
DROP FUNCTION countersign_viewer_people(TEXT);
