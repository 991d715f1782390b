-- +goose Up
-- TRUNCATE fires no row trigger: without a statement trigger, emptying the
-- signed checkpoints needed no trigger to be disabled first.
CREATE TRIGGER audit_checkpoints_no_truncate
    BEFORE TRUNCATE ON audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION audit_checkpoints_append_only();

-- +goose Down
DROP TRIGGER audit_checkpoints_no_truncate ON audit_checkpoints;
