package db

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// NotifyChannel is the Postgres channel every state change is announced on.
const NotifyChannel = "countersign"

// Change is the payload of a notification: which approval changed and whose
// inbox shows it. Listeners re-read the row; the payload is only a pointer.
type Change struct {
	ApprovalID string `json:"a,omitempty"`
	Owner      string `json:"o,omitempty"`
	// Teams are the teams whose members may decide it (the rule's team, a
	// service agent's team): their members' streams re-read too.
	Teams []string `json:"t,omitempty"`
	// A coalesced notification names many (notifyMany).
	ApprovalIDs []string `json:"as,omitempty"`
	Owners      []string `json:"os,omitempty"`
}

// changeOf is the notification that wakes everyone's screens that may show
// item a: its owner's and its teams' members' (the backup team's too, once
// the item escalated). Streams re-read through the
// one rule of who may decide, so a poke too many shows nothing more.
func changeOf(a Approval) Change {
	ch := Change{ApprovalID: a.ID, Owner: a.OwnerSubject}
	backup := ""
	if a.EscalatedAt != nil {
		backup = a.EscalateTo
	}
	for _, t := range []string{a.DeciderTeam, a.OwnerTeam, backup} {
		if t != "" && !slices.Contains(ch.Teams, t) {
			ch.Teams = append(ch.Teams, t)
		}
	}
	return ch
}

// maxPayload keeps a coalesced notification well under Postgres's limit of
// 8000 bytes.
const maxPayload = 7000

// notifyMany queues the notifications of many changes inside tx as a few
// payloads, each naming up to maxPayload bytes of ids and owners.
func notifyMany(ctx context.Context, tx execer, changes []Change) error {
	var payloads []string
	cur, size := Change{}, 0
	owners := map[string]bool{}
	teams := map[string]bool{}
	flush := func() {
		if len(cur.ApprovalIDs)+len(cur.Owners)+len(cur.Teams) > 0 {
			b, _ := json.Marshal(cur)
			payloads = append(payloads, string(b))
		}
		cur, size, owners, teams = Change{}, 0, map[string]bool{}, map[string]bool{}
	}
	for _, ch := range changes {
		tsize := 0
		for _, t := range ch.Teams {
			tsize += len(t) + 3
		}
		if size+len(ch.ApprovalID)+len(ch.Owner)+tsize+8 > maxPayload {
			flush()
		}
		if ch.ApprovalID != "" {
			cur.ApprovalIDs = append(cur.ApprovalIDs, ch.ApprovalID)
			size += len(ch.ApprovalID) + 3
		}
		if ch.Owner != "" && !owners[ch.Owner] {
			owners[ch.Owner] = true
			cur.Owners = append(cur.Owners, ch.Owner)
			size += len(ch.Owner) + 3
		}
		for _, t := range ch.Teams {
			if !teams[t] {
				teams[t] = true
				cur.Teams = append(cur.Teams, t)
				size += len(t) + 3
			}
		}
	}
	flush()
	if len(payloads) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) p`, NotifyChannel, payloads)
	return err
}

// OutboxChannel announces committed notification events (RecordEvent). It
// is its own channel so that listeners of NotifyChannel see only changes.
const OutboxChannel = "countersign_outbox"

// OutboxKey is the subscription key of the notification pipeline.
const OutboxKey = "n:outbox"

// notify queues a notification inside tx; Postgres delivers it at commit,
// so a listener never hears of a change that was rolled back.
func notify(ctx context.Context, tx execer, ch Change) error {
	b, _ := json.Marshal(ch)
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, string(b))
	return err
}

// Hub holds the one LISTEN connection of a process and fans notifications
// out in memory to any number of subscribers: long-polling runtimes wait on
// an approval id, browsers' event streams on an owner. A subscriber receives
// only a poke and re-reads the database, so a dropped or merged poke loses
// nothing; after every reconnect all subscribers are poked, so a change made
// while the connection was down is not missed.
type Hub struct {
	url string
	log *slog.Logger

	mu     sync.Mutex
	subs   map[string]map[*Subscription]struct{}
	ready  chan struct{}
	closed chan struct{}
	once   sync.Once
	conn   *pgx.Conn // the current listening connection, for tests

	// Reconnects counts successful LISTENs after the first.
	reconnects int

	retryAfter  time.Duration
	healthEvery time.Duration
}

// SetRetryAfter sets the first pause before reconnecting a lost listener
// (it doubles up to 2s); the default is 100ms.
func (h *Hub) SetRetryAfter(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.retryAfter = d
}

func (h *Hub) backoff(attempt int) time.Duration {
	h.mu.Lock()
	d := h.retryAfter
	h.mu.Unlock()
	if d <= 0 {
		d = 100 * time.Millisecond
	}
	for i := 0; i < attempt && d < maxRetryAfter; i++ {
		d *= 2
	}
	return min(d, maxRetryAfter)
}

// maxRetryAfter caps the pause between reconnects, so that waiters hear of
// decisions soon after the database is back.
const maxRetryAfter = 2 * time.Second

// Subscription receives pokes on C until Close — or, made by
// SubscribeFunc, has its function called instead (C is then nil).
type Subscription struct {
	C    chan struct{}
	fn   func()
	hub  *Hub
	keys []string
}

// NewHub prepares a hub that listens through its own connection to url.
func NewHub(url string, log *slog.Logger) *Hub {
	return &Hub{url: url, log: log, subs: map[string]map[*Subscription]struct{}{},
		ready: make(chan struct{}), closed: make(chan struct{})}
}

// ApprovalKey and OwnerKey name what a subscriber waits on.
func ApprovalKey(id string) string { return "a:" + id }

// OwnerKey is the subscription key of an owner's inbox.
func OwnerKey(subject string) string { return "o:" + subject }

// TeamKey is the subscription key of a team's members' inboxes: a member's
// stream subscribes to it for each of their teams.
func TeamKey(team string) string { return "t:" + team }

// Subscribe starts receiving pokes for key, and for each of more (a
// person's inbox: their own key and their teams').
func (h *Hub) Subscribe(key string, more ...string) *Subscription {
	s := &Subscription{C: make(chan struct{}, 1), hub: h, keys: append([]string{key}, more...)}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range s.keys {
		if h.subs[k] == nil {
			h.subs[k] = map[*Subscription]struct{}{}
		}
		h.subs[k][s] = struct{}{}
	}
	return s
}

// SubscribeFunc calls fn for each poke of key, until Close, instead of
// sending on a channel: a waiter parked without a goroutine of its own
// (a long poll whose connection was taken over) is woken by it. fn runs
// under the hub's lock and must return at once (start a goroutine, or
// note the poke).
func (h *Hub) SubscribeFunc(key string, fn func()) *Subscription {
	s := &Subscription{fn: fn, hub: h, keys: []string{key}}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[key] == nil {
		h.subs[key] = map[*Subscription]struct{}{}
	}
	h.subs[key][s] = struct{}{}
	return s
}

// Close stops the subscription.
func (s *Subscription) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range s.keys {
		if set := h.subs[k]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(h.subs, k)
			}
		}
	}
}

func poke(s *Subscription) {
	if s.fn != nil {
		s.fn()
		return
	}
	select {
	case s.C <- struct{}{}:
	default: // a poke is already pending; one re-read covers both
	}
}

func (h *Hub) pokeKey(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[key] {
		poke(s)
	}
}

func (h *Hub) pokeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.subs {
		for s := range set {
			poke(s)
		}
	}
}

// Subscribers counts live subscriptions (for tests and metrics).
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[*Subscription]bool{}
	for _, set := range h.subs {
		for s := range set {
			seen[s] = true
		}
	}
	return len(seen)
}

// Ready is closed once the first LISTEN is in place.
func (h *Hub) Ready() <-chan struct{} { return h.ready }

// Closed is closed when the process is shutting down: waiters return now.
func (h *Hub) Closed() <-chan struct{} { return h.closed }

// CloseWaiters tells every waiter to return, for a quick shutdown.
// Waiters parked on a function (SubscribeFunc) are poked, to see it.
func (h *Hub) CloseWaiters() {
	h.once.Do(func() {
		close(h.closed)
		h.pokeAll()
	})
}
