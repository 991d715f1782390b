-- +goose Up
-- Signed checkpoints of the audit chain: the sealer signs the head (seq and
-- hash) with an Ed25519 key that is not stored in the database, so that a
-- rewrite of history with recomputed hashes (possible for anyone who can
-- disable the append-only trigger) contradicts a signature it cannot forge.
CREATE TABLE audit_checkpoints (
    id         BIGSERIAL PRIMARY KEY,
    seq        BIGINT NOT NULL,
    hash       TEXT NOT NULL,
    signed_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    key_id     TEXT NOT NULL,
    signature  TEXT NOT NULL
);
CREATE INDEX audit_checkpoints_seq_idx ON audit_checkpoints (seq);

-- +goose StatementBegin
CREATE FUNCTION audit_checkpoints_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_checkpoints is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_checkpoints_no_update_delete
    BEFORE UPDATE OR DELETE ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION audit_checkpoints_append_only();

-- +goose Down
DROP TABLE audit_checkpoints;
DROP FUNCTION audit_checkpoints_append_only();
