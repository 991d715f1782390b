package web

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sessionStore keeps the sessions in Postgres, as pgxstore does, with one
// difference: a session that was destroyed (sign-out) or given a new
// token (sign-in) stays gone. scs saves a session again at the end of
// every request, to push its idle timeout forward, and sends its token
// back in a cookie. A request that loaded the signed-in session before a
// sign-out and writes its headers after it — the inbox's event stream, a
// slow page — would otherwise store that session again under its old
// token and hand the old token back to the browser: the sign-out undone.
// So a deleted session leaves a tombstone row, which Find treats as
// absent and Commit never overwrites; the retention sweep removes it
// once its expiry has passed, which is at least tombstoneFor away, longer
// than any request's write.
type sessionStore struct{ pool *pgxpool.Pool }

// tombstone is the data of a deleted session's row: not something scs's
// codec (gob) writes.
var tombstone = []byte("countersign: session ended")

// tombstoneFor is how long a deleted session's token stays refused at
// least.
const tombstoneFor = 24 * time.Hour

// Find implements scs.Store.
func (s sessionStore) Find(token string) ([]byte, bool, error) {
	var b []byte
	err := s.pool.QueryRow(context.Background(), `SELECT data FROM sessions
		WHERE token = $1 AND current_timestamp < expiry AND data <> $2`, token, tombstone).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// Commit implements scs.Store: it stores the session, unless its token
// was deleted.
func (s sessionStore) Commit(token string, b []byte, expiry time.Time) error {
	_, err := s.pool.Exec(context.Background(), `INSERT INTO sessions (token, data, expiry) VALUES ($1, $2, $3)
		ON CONFLICT (token) DO UPDATE SET data = EXCLUDED.data, expiry = EXCLUDED.expiry WHERE sessions.data <> $4`,
		token, b, expiry, tombstone)
	return err
}

// Delete implements scs.Store: the token's row becomes a tombstone.
func (s sessionStore) Delete(token string) error {
	_, err := s.pool.Exec(context.Background(), `INSERT INTO sessions (token, data, expiry) VALUES ($1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (token) DO UPDATE SET data = EXCLUDED.data, expiry = GREATEST(sessions.expiry, EXCLUDED.expiry)`,
		token, tombstone, tombstoneFor.Seconds())
	return err
}
