-- +goose Up
-- A run refused at start is recorded as well, with its code and the pairs
-- that lacked a valid pre-approval, so that a schedule never fails
-- silently. A refused run lays out nothing and runs nothing.
ALTER TABLE playbook_runs
    ADD COLUMN refused_code  TEXT NOT NULL DEFAULT '',
    ADD COLUMN refused_pairs JSONB NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(refused_pairs) = 'array');

-- +goose Down
ALTER TABLE playbook_runs DROP COLUMN refused_pairs, DROP COLUMN refused_code;
