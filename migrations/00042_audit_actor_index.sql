-- +goose NO TRANSACTION
-- +goose Up
-- The index of audit lines by actor id is dropped: no statement can use
-- it. The audit screen's actor filter matches the id or the name
-- (actor_id = $1 OR actor_name = $1), and an OR is read through indexes
-- only when every arm has one; the name has none, so that filter walks
-- the lines newest first whatever this index holds (EXPLAIN), and nothing
-- else looks lines up by actor id. Every audit line paid an entry in it:
-- one of the table's nine indexes, on the path of every allowed, refused
-- and pending call. Dropped concurrently: writers are not held.
DROP INDEX CONCURRENTLY IF EXISTS audit_events_actor_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_events_actor_idx ON audit_events (actor_id, id DESC);
