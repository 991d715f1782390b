-- +goose Up
-- Who asks and what an edit changes, as the runtime said with the check:
-- its client (name and version), host and working directory, shown as
-- untrusted text; and the preview of the diff it computed (a JSON
-- approval.DiffPreview, NULL when none was sent). The diff is context for
-- the reviewer and never part of the digest the approval binds to; it is
-- removed with the argument preview after the retention period.
ALTER TABLE approvals
    ADD COLUMN runtime_client            TEXT NOT NULL DEFAULT '',
    ADD COLUMN runtime_host              TEXT NOT NULL DEFAULT '',
    ADD COLUMN runtime_working_directory TEXT NOT NULL DEFAULT '',
    ADD COLUMN context_diff              JSONB;

-- +goose Down
ALTER TABLE approvals
    DROP COLUMN runtime_client,
    DROP COLUMN runtime_host,
    DROP COLUMN runtime_working_directory,
    DROP COLUMN context_diff;
