-- +goose Up
-- Why a cancelled item ended, when its status alone does not say it:
-- blocked_by_policy for items an admin's block ended; NULL keeps the code
-- that follows from the status (a stopped turn: approval_cancelled).
ALTER TABLE approvals ADD COLUMN end_code TEXT
    CHECK (end_code IS NULL OR end_code IN ('approval_cancelled', 'blocked_by_policy'));

-- Pending calls are matched within the API key that sent them and the tool
-- they call: another key, or the same call id and arguments for another
-- tool, gets its own item, never this one.
DROP INDEX approvals_pending_call_idx;
CREATE UNIQUE INDEX approvals_pending_call_idx
    ON approvals (api_key_id, owner_subject, conversation_id, turn_id, call_id, tool_id, arguments_digest)
    WHERE status = 'pending';

-- What a block or a stopped turn ends: a tool's items in flight.
CREATE INDEX approvals_tool_in_flight_idx ON approvals (tool_id) WHERE status IN ('pending', 'approved');

-- An approved item that was not claimed yet may still be cancelled (a
-- stopped turn, a block); every other rule of invariant 11 stays.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION approvals_status_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF OLD.status IN ('rejected', 'expired', 'cancelled', 'consumed')
           OR (OLD.status = 'approved' AND NEW.status NOT IN ('consumed', 'cancelled')) THEN
            RAISE EXCEPTION 'approval % is %, it cannot become %', OLD.id, OLD.status, NEW.status
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION approvals_status_guard() RETURNS trigger
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
DROP INDEX approvals_tool_in_flight_idx;
DROP INDEX approvals_pending_call_idx;
CREATE UNIQUE INDEX approvals_pending_call_idx
    ON approvals (owner_subject, conversation_id, turn_id, call_id, arguments_digest)
    WHERE status = 'pending';
ALTER TABLE approvals DROP COLUMN end_code;
