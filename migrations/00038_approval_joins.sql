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
    call_id         TEXT NOT NULL,
    runtime_client  TEXT NOT NULL DEFAULT '',
    joined_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    claimed_at      TIMESTAMPTZ
);

-- The join finds the first guard's item by its owner and call id.
CREATE INDEX approvals_owner_call_idx ON approvals (owner_subject, call_id);

-- The call ids of the first guard's later identical calls that joined its
-- item (a hook answered "still waiting", the model made the call again with
-- a new id, and the hook attached it to the same item): the agent then runs
-- the tool under the new id, and the second guard asks with that id.
CREATE TABLE approval_call_ids (
    approval_id UUID NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    call_id     TEXT NOT NULL,
    PRIMARY KEY (approval_id, call_id)
);
CREATE INDEX approval_call_ids_call_idx ON approval_call_ids (call_id);

-- +goose Down
DROP TABLE approval_call_ids;
DROP INDEX approvals_owner_call_idx;
DROP TABLE approval_joins;
