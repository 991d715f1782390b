package db

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// SetHealthCheck sets how long the listener waits for a notification before
// it checks that its connection still answers (default 10s). A connection
// that stops answering without closing (a lost host, a dropped route) is
// otherwise never noticed: no notification arrives on it, and none fails.
func (h *Hub) SetHealthCheck(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.healthEvery = d
}

func (h *Hub) healthInterval() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.healthEvery <= 0 {
		return 10 * time.Second
	}
	return h.healthEvery
}

// ListenerApplicationName names the listening connections in
// pg_stat_activity, so that operators (and the soak) can find them.
const ListenerApplicationName = "countersign listener"

// Run listens until ctx ends, reconnecting with backoff.
func (h *Hub) Run(ctx context.Context) {
	first := true
	attempt := 0
	for ctx.Err() == nil {
		listened, err := h.listen(ctx, &first)
		if ctx.Err() != nil {
			return
		}
		if listened {
			attempt = 0
		}
		wait := h.backoff(attempt)
		attempt++
		h.log.Warn("notification listener lost its connection; reconnecting", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// listen holds one LISTEN connection until it fails; listened says whether
// LISTEN was in place at some point. A connection that stays silent for the
// health interval must answer a query, or it is dropped and replaced.
func (h *Hub) listen(ctx context.Context, first *bool) (listened bool, err error) {
	cfg, err := pgx.ParseConfig(h.url)
	if err != nil {
		return false, err
	}
	cfg.RuntimeParams["application_name"] = ListenerApplicationName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer func() {
		h.mu.Lock()
		if h.conn == conn { // never keep a connection that is gone
			h.conn = nil
		}
		h.mu.Unlock()
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel+"; LISTEN "+OutboxChannel); err != nil {
		return false, err
	}
	h.mu.Lock()
	h.conn = conn
	if !*first {
		h.reconnects++
	}
	h.mu.Unlock()
	if *first {
		*first = false
		close(h.ready)
	} else {
		// Anything may have changed while we were not listening: every
		// subscriber re-reads now that LISTEN is in place again.
		h.pokeAll()
	}
	for {
		every := h.healthInterval()
		wctx, cancel := context.WithTimeout(ctx, every)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil && ctx.Err() == nil && wctx.Err() != nil {
			// Silent for a while: prove the connection still answers.
			pctx, cancel := context.WithTimeout(ctx, every)
			_, err = conn.Exec(pctx, "SELECT 1")
			cancel()
			if err == nil {
				continue
			}
		}
		if err != nil {
			return true, err
		}
		if n.Channel == OutboxChannel {
			h.pokeKey(OutboxKey)
			continue
		}
		h.deliver(n.Payload)
	}
}

// deliver pokes the subscribers a notification names.
func (h *Hub) deliver(payload string) {
	var ch Change
	if err := json.Unmarshal([]byte(payload), &ch); err != nil {
		h.log.Warn("unreadable notification", "payload", payload)
		return
	}
	if ch.ApprovalID != "" {
		h.pokeKey(ApprovalKey(ch.ApprovalID))
	}
	if ch.Owner != "" {
		h.pokeKey(OwnerKey(ch.Owner))
	}
	for _, id := range ch.ApprovalIDs {
		h.pokeKey(ApprovalKey(id))
	}
	for _, o := range ch.Owners {
		h.pokeKey(OwnerKey(o))
	}
	for _, t := range ch.Teams {
		h.pokeKey(TeamKey(t))
	}
}

// ListenerPID is the backend pid of the listening connection (tests kill it
// with pg_terminate_backend to prove that nothing is lost).
func (h *Hub) ListenerPID() uint32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil {
		return 0
	}
	return h.conn.PgConn().PID()
}

// Reconnects is how many times the listener reconnected.
func (h *Hub) Reconnects() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reconnects
}
