-- +goose NO TRANSACTION
-- +goose Up
-- Two indexes of audit lines that no statement uses any more, dropped
-- concurrently (writers are not held). Every audit line paid an entry in
-- each, on the path of every allowed, refused and pending call.
--
-- By actor id: the audit screen's actor filter matches the id or the name
-- (actor_id = $1 OR actor_name = $1), and an OR is read through indexes
-- only when every arm has one; the name has none, so that filter walks the
-- lines newest first whatever this index holds (EXPLAIN), and nothing else
-- looks lines up by actor id.
--
-- Of unsealed lines (xid, id WHERE seq IS NULL): the sealer reads the
-- queue audit_pending since migration 00042, and seq is no longer written,
-- so this index would hold every line from then on.
DROP INDEX CONCURRENTLY IF EXISTS audit_events_actor_idx;
DROP INDEX CONCURRENTLY IF EXISTS audit_events_unsealed_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_events_unsealed_idx ON audit_events (xid, id) WHERE seq IS NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_events_actor_idx ON audit_events (actor_id, id DESC);
