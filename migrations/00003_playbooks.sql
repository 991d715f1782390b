-- +goose Up
-- Playbooks: definitions registered by the runtime, owned by a person, run
-- unattended with only the tools their owner approved in advance.
CREATE TABLE playbooks (
    id            TEXT PRIMARY KEY,
    owner_subject TEXT NOT NULL,
    name          TEXT NOT NULL,
    definition    JSONB NOT NULL,
    fingerprint   TEXT NOT NULL,
    enabled       BOOLEAN NOT NULL DEFAULT false,
    schedule      TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX playbooks_owner_idx ON playbooks (owner_subject);

-- A pre-approval holds under the premises it was given: the playbook's
-- fingerprint, the tool's policy version and the owner.
CREATE TABLE playbook_preapprovals (
    id             BIGSERIAL PRIMARY KEY,
    playbook_id    TEXT NOT NULL REFERENCES playbooks (id),
    tool_id        BIGINT NOT NULL REFERENCES tools (id),
    fingerprint    TEXT NOT NULL,
    policy_version INTEGER NOT NULL,
    owner_subject  TEXT NOT NULL,
    granted_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at     TIMESTAMPTZ,
    lapsed_at      TIMESTAMPTZ,
    lapse_reason   TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX playbook_preapprovals_live_idx ON playbook_preapprovals (playbook_id, tool_id)
    WHERE revoked_at IS NULL AND lapsed_at IS NULL;

-- A run lays out, at its start, the pairs whose pre-approval was valid.
CREATE TABLE playbook_runs (
    id          UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    playbook_id TEXT NOT NULL REFERENCES playbooks (id),
    fingerprint TEXT NOT NULL,
    preapproved BIGINT[] NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX playbook_runs_playbook_idx ON playbook_runs (playbook_id, started_at DESC);

-- Calls a run was refused, so that a schedule never fails silently.
CREATE TABLE playbook_run_refusals (
    id         BIGSERIAL PRIMARY KEY,
    run_id     UUID NOT NULL REFERENCES playbook_runs (id),
    tool_id    BIGINT NOT NULL REFERENCES tools (id),
    call_id    TEXT NOT NULL,
    code       TEXT NOT NULL,
    refused_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX playbook_run_refusals_run_idx ON playbook_run_refusals (run_id);

-- +goose Down
DROP TABLE playbook_run_refusals;
DROP TABLE playbook_runs;
DROP TABLE playbook_preapprovals;
DROP TABLE playbooks;
