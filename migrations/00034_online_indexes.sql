-- +goose NO TRANSACTION
-- +goose Up
-- The indexes on approvals that 00026, 00027 and 00030 need, built
-- concurrently: instances of the previous release keep creating and
-- deciding items while they are built (a plain CREATE INDEX holds off every
-- write to the table until it is done, and in those migrations it did so
-- while their transaction held the tools table too). An index left invalid
-- by an interrupted run is built again. Each statement may run again.

-- +goose StatementBegin
DO $$
DECLARE
    name TEXT;
BEGIN
    FOR name IN SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE NOT i.indisvalid AND c.relname IN ('approvals_decider_team_pending_idx', 'approvals_owner_team_pending_idx',
            'approvals_escalation_due_idx', 'approvals_escalate_to_pending_idx')
    LOOP
        EXECUTE format('DROP INDEX %I', name);
    END LOOP;
END $$;
-- +goose StatementEnd
CREATE INDEX CONCURRENTLY IF NOT EXISTS approvals_decider_team_pending_idx ON approvals (decider_team, expires_at) WHERE status = 'pending';
CREATE INDEX CONCURRENTLY IF NOT EXISTS approvals_owner_team_pending_idx ON approvals (owner_team, expires_at) WHERE status = 'pending';
CREATE INDEX CONCURRENTLY IF NOT EXISTS approvals_escalation_due_idx ON approvals (escalate_at)
    WHERE status = 'pending' AND escalated_at IS NULL AND escalate_at IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS approvals_escalate_to_pending_idx ON approvals (escalate_to) WHERE status = 'pending' AND escalate_to <> '';

-- The checks 00026 and 00028 added NOT VALID (every new row was checked
-- from the start), checked on the items stored before them. Validating
-- reads the table without holding off its writers.
ALTER TABLE approvals VALIDATE CONSTRAINT approvals_deciders_check;
ALTER TABLE approvals VALIDATE CONSTRAINT approvals_quorum_check;
ALTER TABLE approvals VALIDATE CONSTRAINT approvals_deciders_team;
ALTER TABLE approvals VALIDATE CONSTRAINT approvals_proof_required_check;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS approvals_escalate_to_pending_idx;
DROP INDEX CONCURRENTLY IF EXISTS approvals_escalation_due_idx;
DROP INDEX CONCURRENTLY IF EXISTS approvals_owner_team_pending_idx;
DROP INDEX CONCURRENTLY IF EXISTS approvals_decider_team_pending_idx;
