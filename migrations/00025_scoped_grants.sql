-- +goose Up
-- "Always allow calls like this": a tool's policy may offer it even where
-- standing approval is not offered (matchable; on by default for tools
-- that name a shell argument), and a standing grant may carry a scope —
-- what it covers as data (checked by the server against every later call's
-- arguments) and in words (as the person confirmed it). A scope keeps the
-- leading words of shell commands and the digests of fixed argument values,
-- never the values themselves.
ALTER TABLE tools ADD COLUMN matchable BOOLEAN NOT NULL DEFAULT false;
UPDATE tools SET matchable = true WHERE shell_argument <> '';
ALTER TABLE standing_grants
    ADD COLUMN scope       JSONB,
    ADD COLUMN scope_words TEXT NOT NULL DEFAULT '';

-- +goose Down
-- A scoped grant covers some calls of a tool; without its scope it would
-- cover them all. Undone, it is revoked instead: its person is asked again.
UPDATE standing_grants SET revoked_at = now() WHERE scope IS NOT NULL AND revoked_at IS NULL;
ALTER TABLE standing_grants DROP COLUMN scope_words, DROP COLUMN scope;
ALTER TABLE tools DROP COLUMN matchable;
