-- +goose Up
-- A tool may name the argument that holds a shell command line: its calls
-- get the command parsed on the card. The coding agents' own shell tools
-- (registered by `countersign hook` before it named the argument) hold it
-- in `command`.
ALTER TABLE tools ADD COLUMN shell_argument TEXT NOT NULL DEFAULT '';
UPDATE tools SET shell_argument = 'command' WHERE connector IN ('claude-code', 'codex') AND name = 'Bash';

-- +goose Down
ALTER TABLE tools DROP COLUMN shell_argument;
