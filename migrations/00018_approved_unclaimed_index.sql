-- +goose Up
-- A check that would ask a person first looks for the same call approved
-- and not yet used (a retry whose first answer was lost). Without an index
-- of its own that lookup could be planned on the tool's in-flight items and
-- read every waiting item of a busy tool, once per check.
CREATE INDEX approvals_approved_unclaimed_idx ON approvals
	(api_key_id, owner_subject, conversation_id, turn_id, call_id)
	WHERE status = 'approved' AND consumed_at IS NULL;

-- +goose Down
DROP INDEX approvals_approved_unclaimed_idx;
