-- +goose Up
-- The full argument text of a call, kept only while its item waits, so that
-- its owner can expand a shortened value before deciding (invariant 13).
-- It is deleted the moment the item leaves pending (decided, expired,
-- cancelled), by the trigger below, whichever path ends it; the preview,
-- the digest and the size are what stays (invariant 7). Bytes, not text:
-- what the model sent is kept as sent.
CREATE TABLE approval_arguments (
    approval_id UUID PRIMARY KEY REFERENCES approvals (id) ON DELETE CASCADE,
    arguments   BYTEA NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION approval_arguments_forget() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM approval_arguments WHERE approval_id = NEW.id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER approval_arguments_forget AFTER UPDATE OF status ON approvals
    FOR EACH ROW WHEN (NEW.status <> 'pending') EXECUTE FUNCTION approval_arguments_forget();

-- The runtime's label for the conversation, when it sends one; and a note
-- the reviewer typed while approving (kept, never passed to the model).
ALTER TABLE approvals
    ADD COLUMN conversation_title TEXT NOT NULL DEFAULT '',
    ADD COLUMN reviewer_note      TEXT NOT NULL DEFAULT '';

-- The longest a standing grant of the tool may last; NULL: no limit.
ALTER TABLE tools ADD COLUMN max_grant_seconds BIGINT CHECK (max_grant_seconds > 0);

-- When a standing grant ends (NULL: until revoked or the policy changes),
-- and when its end was recorded (audited once, by the sweep).
ALTER TABLE standing_grants
    ADD COLUMN expires_at TIMESTAMPTZ,
    ADD COLUMN ended_at   TIMESTAMPTZ;
CREATE INDEX standing_grants_due_idx ON standing_grants (expires_at)
    WHERE expires_at IS NOT NULL AND ended_at IS NULL AND revoked_at IS NULL;

-- +goose Down
DROP INDEX standing_grants_due_idx;
ALTER TABLE standing_grants DROP COLUMN ended_at, DROP COLUMN expires_at;
ALTER TABLE tools DROP COLUMN max_grant_seconds;
ALTER TABLE approvals DROP COLUMN reviewer_note, DROP COLUMN conversation_title;
DROP TRIGGER approval_arguments_forget ON approvals;
DROP FUNCTION approval_arguments_forget();
DROP TABLE approval_arguments;
