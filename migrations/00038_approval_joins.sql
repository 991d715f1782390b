-- +goose Up
-- One call, one question (invariant 18): a call that passes two
-- Countersign guards — a coding agent's hook and the MCP gateway, say — makes
-- one item. The second guard's check joins the first guard's item for the
-- same owner, call id, tool and arguments digest instead of opening another
-- (db/check_join.go). This is the joining guard: which key, which of its
-- conversations and turns, what the runtime said it is, and when it used the
-- approval (once). One joining guard per item: a further guard is refused
-- the join, and asks anew.
CREATE TABLE approval_joins (
    approval_id     UUID PRIMARY KEY REFERENCES approvals (id) ON DELETE CASCADE,
    api_key_id      BIGINT NOT NULL REFERENCES api_keys (id),
    conversation_id TEXT NOT NULL,
    turn_id         TEXT NOT NULL,
    runtime_client  TEXT NOT NULL DEFAULT '',
    joined_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    claimed_at      TIMESTAMPTZ
);

-- The join finds the first guard's item by its owner and call id.
CREATE INDEX approvals_owner_call_idx ON approvals (owner_subject, call_id);

-- +goose Down
DROP INDEX approvals_owner_call_idx;
DROP TABLE approval_joins;
