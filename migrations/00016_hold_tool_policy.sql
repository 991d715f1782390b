-- +goose Up
-- hold_tool_policy locks a tool's row (shared) before a pending item is
-- inserted, so that a policy change or retirement either commits first and
-- is seen here, or waits for the item and then ends it. It fails with
-- SQLSTATE CS001 when the policy read earlier is no longer current, which
-- lets the check send its writes in one round trip and still roll them all
-- back when the policy moved underneath.
-- +goose StatementBegin
CREATE FUNCTION hold_tool_policy(p_tool BIGINT, p_version INT) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM tools t JOIN connectors c ON c.name = t.connector
     WHERE t.id = p_tool AND t.policy_version = p_version AND t.retired_at IS NULL AND c.deleted_at IS NULL
       FOR SHARE OF t;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the tool''s policy changed during the check' USING ERRCODE = 'CS001';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION hold_tool_policy(BIGINT, INT);
