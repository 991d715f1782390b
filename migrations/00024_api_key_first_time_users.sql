-- +goose Up
-- A check for a user who has never signed in is refused (unknown_user)
-- unless the runtime's key lets items wait for first-time users.
ALTER TABLE api_keys ADD COLUMN allow_first_time_users boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN allow_first_time_users;
