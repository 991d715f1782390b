-- +goose Up
-- Irreversible: undone, an item waiting for a passkey approval could be approved without one
-- Passkey step-up (invariant 16). A person's passkeys (WebAuthn
-- credentials); a tool's policy may require one to approve (proof, with an
-- optional CEL proof_condition: step-up only when it is true); an item
-- records the proof its approval needs (from the policy, or stronger from
-- the check's "proof"); and the assertion that approved an item is kept as
-- its receipt, beside the decision's audit line, for `audit verify`.
CREATE TABLE passkeys (
    id              BIGSERIAL PRIMARY KEY,
    user_subject    TEXT NOT NULL,
    name            TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    credential_id   BYTEA NOT NULL UNIQUE,
    public_key      BYTEA NOT NULL,
    sign_count      BIGINT NOT NULL DEFAULT 0,
    user_verified   BOOLEAN NOT NULL DEFAULT false,
    backup_eligible BOOLEAN NOT NULL DEFAULT false,
    backup_state    BOOLEAN NOT NULL DEFAULT false,
    aaguid          BYTEA NOT NULL DEFAULT ''::bytea,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_used_at    TIMESTAMPTZ,
    -- A removed passkey approves nothing more, but its public key stays so
    -- that the receipts it signed can still be checked.
    removed_at      TIMESTAMPTZ
);
CREATE INDEX passkeys_user_idx ON passkeys (user_subject) WHERE removed_at IS NULL;

ALTER TABLE tools
    ADD COLUMN proof           TEXT NOT NULL DEFAULT 'none' CHECK (proof IN ('none', 'passkey')),
    ADD COLUMN proof_condition TEXT NOT NULL DEFAULT '';

-- Its check is validated on the stored items by 00034 (online).
ALTER TABLE approvals
    ADD COLUMN proof_required TEXT NOT NULL DEFAULT 'none',
    ADD CONSTRAINT approvals_proof_required_check CHECK (proof_required IN ('none', 'passkey')) NOT VALID;

-- One receipt per approving person: an item approved by one person has
-- one; an item under a quorum rule has one for each approval vote.
CREATE TABLE approval_receipts (
    id                 BIGSERIAL PRIMARY KEY,
    approval_id        UUID NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    passkey_id         BIGINT NOT NULL REFERENCES passkeys (id),
    decision           TEXT NOT NULL,
    scope              TEXT NOT NULL,
    rp_id              TEXT NOT NULL,
    origin             TEXT NOT NULL,
    credential_id      BYTEA NOT NULL,
    authenticator_data BYTEA NOT NULL,
    client_data_json   BYTEA NOT NULL,
    signature          BYTEA NOT NULL,
    user_handle        BYTEA NOT NULL DEFAULT ''::bytea,
    audit_event_id     BIGINT REFERENCES audit_events (id),
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX approval_receipts_approval_idx ON approval_receipts (approval_id);
-- A quorum vote cast with a passkey; when an item comes to need one while
-- its quorum is under way, only such votes count.
ALTER TABLE approval_votes ADD COLUMN with_proof BOOLEAN NOT NULL DEFAULT false;

-- A tool that requires a passkey never offers standing approval: a grant
-- would approve later calls without one.
-- +goose StatementBegin
CREATE FUNCTION tools_proof_no_standing() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.proof = 'passkey' THEN
        NEW.standing_approval := false;
        NEW.matchable := false;
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tools_proof_no_standing BEFORE INSERT OR UPDATE ON tools
    FOR EACH ROW EXECUTE FUNCTION tools_proof_no_standing();

-- Belt and braces: whatever path decides it, an item that needs a passkey
-- is approved only with its receipt already stored in the same
-- transaction.
-- +goose StatementBegin
CREATE FUNCTION approvals_proof_receipt() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.proof_required = 'passkey' AND NEW.status = 'approved' AND OLD.status = 'pending'
       AND NOT EXISTS (SELECT 1 FROM approval_receipts r WHERE r.approval_id = NEW.id) THEN
        RAISE EXCEPTION 'approval % needs a passkey receipt', NEW.id USING ERRCODE = 'CS033';
    END IF;
    IF NEW.proof_required = 'none' AND OLD.proof_required = 'passkey' THEN
        RAISE EXCEPTION 'approval % may not drop its passkey requirement', NEW.id USING ERRCODE = 'CS033';
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER approvals_proof_receipt BEFORE UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_proof_receipt();

-- +goose Down
DROP TRIGGER approvals_proof_receipt ON approvals;
DROP FUNCTION approvals_proof_receipt();
DROP TRIGGER tools_proof_no_standing ON tools;
DROP FUNCTION tools_proof_no_standing();
ALTER TABLE approval_votes DROP COLUMN with_proof;
DROP TABLE approval_receipts;
ALTER TABLE approvals DROP COLUMN proof_required;
ALTER TABLE tools DROP COLUMN proof_condition, DROP COLUMN proof;
DROP TABLE passkeys;
