-- +goose Up
-- The tool catalog: connectors and their tools, with each tool's policy.
CREATE TABLE connectors (
    name         TEXT PRIMARY KEY,
    display_name TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('builtin', 'connector')),
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at   TIMESTAMPTZ
);

CREATE TABLE tools (
    id                BIGSERIAL PRIMARY KEY,
    connector         TEXT NOT NULL REFERENCES connectors (name),
    name              TEXT NOT NULL,
    display_name      TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    -- MCP annotations as sent; NULL means the hint was absent.
    read_only_hint    BOOLEAN,
    destructive_hint  BOOLEAN,
    idempotent_hint   BOOLEAN,
    open_world_hint   BOOLEAN,
    mode              TEXT NOT NULL CHECK (mode IN ('allow', 'require_approval', 'block')),
    standing_approval BOOLEAN NOT NULL,
    condition         TEXT NOT NULL DEFAULT '',
    policy_version    INTEGER NOT NULL DEFAULT 1,
    annotations_changed_at TIMESTAMPTZ,
    retired_at        TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (connector, name)
);

-- One row per call that needed a person. Arguments are never stored: only
-- their digest, size and a shortened per-key preview.
CREATE TABLE approvals (
    id                  UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    owner_subject       TEXT NOT NULL,
    api_key_id          BIGINT NOT NULL REFERENCES api_keys (id),
    conversation_id     TEXT NOT NULL,
    turn_id             TEXT NOT NULL,
    call_id             TEXT NOT NULL,
    tool_id             BIGINT NOT NULL REFERENCES tools (id),
    connector           TEXT NOT NULL,
    tool                TEXT NOT NULL,
    arguments_digest    TEXT NOT NULL,
    arguments_size      INTEGER NOT NULL,
    preview             JSONB NOT NULL,
    agent_reason        TEXT NOT NULL DEFAULT '',
    available_decisions TEXT[] NOT NULL,
    policy_version      INTEGER NOT NULL,
    status              TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled', 'consumed')),
    scope               TEXT CHECK (scope IN ('once', 'conversation', 'always')),
    reviewer_id         BIGINT REFERENCES users (id),
    reject_reason       TEXT NOT NULL DEFAULT '',
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at          TIMESTAMPTZ NOT NULL,
    decided_at          TIMESTAMPTZ,
    consumed_at         TIMESTAMPTZ
);
-- An identical call sent again while pending finds the same item.
CREATE UNIQUE INDEX approvals_pending_call_idx
    ON approvals (owner_subject, conversation_id, turn_id, call_id, arguments_digest)
    WHERE status = 'pending';
CREATE INDEX approvals_owner_pending_idx ON approvals (owner_subject, created_at DESC) WHERE status = 'pending';
CREATE INDEX approvals_owner_decided_idx ON approvals (owner_subject, decided_at DESC) WHERE decided_at IS NOT NULL;
CREATE INDEX approvals_expiry_idx ON approvals (expires_at) WHERE status = 'pending';
CREATE INDEX approvals_turn_idx ON approvals (owner_subject, conversation_id, turn_id, tool_id, arguments_digest);

-- Terminal means terminal (invariant 11), enforced below the application too.
-- +goose StatementBegin
CREATE FUNCTION approvals_status_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF OLD.status IN ('rejected', 'expired', 'cancelled', 'consumed')
           OR (OLD.status = 'approved' AND NEW.status <> 'consumed') THEN
            RAISE EXCEPTION 'approval % is %, it cannot become %', OLD.id, OLD.status, NEW.status
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER approvals_status_guard BEFORE UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_status_guard();

-- Standing consent: "Always allow" (conversation_id NULL) and
-- "Allow in this conversation" grants, each bound to the policy version in
-- force when it was given.
CREATE TABLE standing_grants (
    id              BIGSERIAL PRIMARY KEY,
    user_subject    TEXT NOT NULL,
    tool_id         BIGINT NOT NULL REFERENCES tools (id),
    conversation_id TEXT,
    policy_version  INTEGER NOT NULL,
    approval_id     UUID REFERENCES approvals (id),
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_used_at    TIMESTAMPTZ,
    revoked_at      TIMESTAMPTZ
);
CREATE INDEX standing_grants_lookup_idx ON standing_grants (user_subject, tool_id) WHERE revoked_at IS NULL;

-- +goose Down
DROP TABLE standing_grants;
DROP TRIGGER approvals_status_guard ON approvals;
DROP FUNCTION approvals_status_guard();
DROP TABLE approvals;
DROP TABLE tools;
DROP TABLE connectors;
