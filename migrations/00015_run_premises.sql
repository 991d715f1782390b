-- +goose Up
-- A run's pre-approvals hold only under the premises of its start
-- (invariant 9): the API key that started it, the playbook's owner then,
-- and the very pre-approval rows it laid out. Runs started before this
-- migration have no key and no owner: they pass nothing by pre-approval.
ALTER TABLE playbook_runs
    ADD COLUMN api_key_id      BIGINT,
    ADD COLUMN owner_subject   TEXT NOT NULL DEFAULT '',
    ADD COLUMN preapproval_ids BIGINT[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE playbook_runs DROP COLUMN preapproval_ids, DROP COLUMN owner_subject, DROP COLUMN api_key_id;
