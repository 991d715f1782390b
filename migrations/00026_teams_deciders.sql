-- +goose Up
-- Irreversible: undone, a two-person rule would become the owner's alone, and a team key's items would have nobody to decide them
-- Who decides. Teams come from the identity provider's groups claim
-- (source 'oidc', refreshed at every sign-in) and from admins (source
-- 'admin'); a person may be a member both ways, each kept on its own row so
-- that a sign-in refreshes only what the provider said.
CREATE TABLE teams (
    name        TEXT PRIMARY KEY CHECK (name ~ '^[^[:cntrl:]]{1,100}$' AND name = btrim(name)),
    description TEXT NOT NULL DEFAULT '' CHECK (char_length(description) <= 500),
    source      TEXT NOT NULL CHECK (source IN ('oidc', 'admin')),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE team_members (
    team     TEXT NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    subject  TEXT NOT NULL CHECK (subject <> ''),
    source   TEXT NOT NULL CHECK (source IN ('oidc', 'admin')),
    added_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (team, subject, source)
);
CREATE INDEX team_members_subject_idx ON team_members (subject, team);

-- The approver rule of a tool, beside its mode. deciders_condition (CEL
-- over args, optional) chooses the rule: when set and false for a call,
-- the owner decides; when true, or when it cannot be evaluated, the rule
-- below applies (fail closed towards more deciders, never fewer).
ALTER TABLE tools
    ADD COLUMN deciders           TEXT NOT NULL DEFAULT 'owner'
        CHECK (deciders IN ('owner', 'team', 'owner_or_team', 'quorum')),
    ADD COLUMN decider_team       TEXT,
    ADD COLUMN quorum             INTEGER NOT NULL DEFAULT 1 CHECK (quorum BETWEEN 1 AND 20),
    ADD COLUMN deciders_condition TEXT NOT NULL DEFAULT '',
    ADD CONSTRAINT tools_deciders_team CHECK (deciders = 'owner' OR decider_team IS NOT NULL);

-- A key may belong to a team instead of a person: its checks may omit
-- user, and their items go to the team (approvals.owner_team).
ALTER TABLE api_keys ADD COLUMN team TEXT;

-- Each item keeps the rule chosen for it when it was created: a later
-- policy change never moves an item already waiting to other people.
-- owner_team is the team of a service agent's key; its items have no
-- owner_subject ('') and the team stands in for the owner.
ALTER TABLE approvals
    ADD COLUMN deciders     TEXT NOT NULL DEFAULT 'owner',
    ADD COLUMN decider_team TEXT,
    ADD COLUMN quorum       INTEGER NOT NULL DEFAULT 1,
    ADD COLUMN owner_team   TEXT,
    ADD CONSTRAINT approvals_deciders_check CHECK (deciders IN ('owner', 'team', 'owner_or_team', 'quorum')) NOT VALID,
    ADD CONSTRAINT approvals_quorum_check CHECK (quorum BETWEEN 1 AND 20) NOT VALID,
    ADD CONSTRAINT approvals_deciders_team CHECK (deciders = 'owner' OR decider_team IS NOT NULL) NOT VALID,
    ADD CONSTRAINT approvals_has_owner CHECK (owner_subject <> '' OR owner_team IS NOT NULL) NOT VALID;
-- Online: the new columns' checks hold for every new row at once and are
-- validated on the stored ones by 00034 (a check added with its column
-- would read the whole table while holding it), as are the indexes of pending items by
-- decider_team and by owner_team (approvals_decider_team_pending_idx,
-- approvals_owner_team_pending_idx) are built, concurrently by 00034,
-- not here under the locks this transaction holds.

-- The votes of a quorum: one row per person, whatever they sent how often.
-- The item turns approved when quorum distinct eligible people approved;
-- the first rejection ends it. Each vote has its own audit line.
CREATE TABLE approval_votes (
    approval    UUID NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    subject     TEXT NOT NULL,
    reviewer_id BIGINT REFERENCES users (id),
    decision    TEXT NOT NULL CHECK (decision IN ('approve', 'reject')),
    at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (approval, subject),
    -- Nobody approves twice: not as themselves and again as a delegate.
    UNIQUE (approval, reviewer_id)
);

-- countersign_is_member says whether viewer belongs to team, from either
-- source.
-- +goose StatementBegin
CREATE FUNCTION countersign_is_member(p_team TEXT, p_viewer TEXT) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT p_team IS NOT NULL AND COALESCE(p_viewer, '') <> ''
       AND EXISTS (SELECT 1 FROM team_members m WHERE m.team = p_team AND m.subject = p_viewer)
$$;
-- +goose StatementEnd

-- countersign_may_decide is THE rule of who may see and decide an item.
-- Every read that shows items (inbox, request page, streams, counts,
-- notifications, votes) goes through it, so that it lives in one place:
--   owner          the owner (for a team's key: any member of its team)
--   team           any member of decider_team
--   owner_or_team  either
--   quorum         any member of decider_team, but never the owner when
--                  more than one approval is needed: an agent's owner
--                  cannot satisfy a two-person rule alone.
-- Later migrations replace it (CREATE OR REPLACE) to add ways of deciding
-- (escalation, delegation); its signature stays.
-- +goose StatementBegin
CREATE FUNCTION countersign_may_decide(a approvals, viewer TEXT) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(viewer, '') <> '' AND CASE a.deciders
        WHEN 'owner' THEN
            (a.owner_subject <> '' AND a.owner_subject = viewer)
            OR (a.owner_subject = '' AND countersign_is_member(a.owner_team, viewer))
        WHEN 'team' THEN
            countersign_is_member(a.decider_team, viewer)
        WHEN 'owner_or_team' THEN
            (a.owner_subject <> '' AND a.owner_subject = viewer)
            OR (a.owner_subject = '' AND countersign_is_member(a.owner_team, viewer))
            OR countersign_is_member(a.decider_team, viewer)
        WHEN 'quorum' THEN
            countersign_is_member(a.decider_team, viewer)
            AND (a.quorum = 1 OR a.owner_subject <> viewer)
        ELSE false
    END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION countersign_may_decide(approvals, TEXT);
DROP FUNCTION countersign_is_member(TEXT, TEXT);
DROP TABLE approval_votes;
DROP INDEX IF EXISTS approvals_owner_team_pending_idx;
DROP INDEX IF EXISTS approvals_decider_team_pending_idx;
ALTER TABLE approvals
    DROP CONSTRAINT approvals_has_owner,
    DROP CONSTRAINT approvals_deciders_team,
    DROP COLUMN owner_team,
    DROP COLUMN quorum,
    DROP COLUMN decider_team,
    DROP COLUMN deciders;
ALTER TABLE api_keys DROP COLUMN team;
ALTER TABLE tools
    DROP CONSTRAINT tools_deciders_team,
    DROP COLUMN deciders_condition,
    DROP COLUMN quorum,
    DROP COLUMN decider_team,
    DROP COLUMN deciders;
DROP TABLE team_members;
DROP TABLE teams;
