package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
)

// A long poll's runtime usually waits for a person, minutes at a time,
// and an installation may have ten thousand of them waiting at once. A
// request held by its handler costs two goroutines (the handler's and the
// server's read of the connection, which notices a runtime that goes
// away) and their stacks and buffers: about 23 KiB. So a waiting request
// on HTTP/1.x is parked instead: the connection is taken over (hijacked),
// the handler returns, and what is left is the connection, a timer and a
// subscription whose pokes start a goroutine only for the moment of a
// re-read. The answer is written on the connection as the handler would
// have written it, with the headers the middleware set, and the
// connection is closed after it. A runtime that goes away while parked is
// noticed when its answer is written: it holds its few hundred bytes
// until then (the wait's end at most, MaxWait).

// parkTimeout bounds one re-read of a parked waiter: as long as a request
// may wait, since a decision wakes all its waiters at once and they queue
// for the pool.
const parkTimeout = MaxWait

// parkedWait is one parked long poll.
type parkedWait struct {
	h      *Handler
	conn   net.Conn
	header http.Header
	key    db.APIKey
	id     string
	sub    *db.Subscription

	mu          sync.Mutex
	running     bool // a goroutine is reading the item
	again       bool // poked while it read
	over        bool // the wait has elapsed
	done        bool // answered
	triedExpiry bool
	last        db.Approval // the latest read, answered as it is when the process shuts down
	deadline    *time.Timer
	timer       *time.Timer
}

// subscribeParked subscribes a waiter that may be parked, before the
// request's first read of item id, so that a change between that read and
// the wait still wakes it: until it is parked (park), a poke only notes
// that a read is due.
func (h *Handler) subscribeParked(key db.APIKey, id string) *parkedWait {
	p := &parkedWait{h: h, key: key, id: id, running: true}
	p.sub = h.Hub.SubscribeFunc(db.ApprovalKey(id), p.wake)
	return p
}

// park takes over c's connection to wait for item a (pending, with time
// left), read after p subscribed, without a goroutine; false when the
// connection cannot be taken over (HTTP/2), and the caller lets p go and
// waits as before.
func (p *parkedWait) park(c echo.Context, a db.Approval, wait time.Duration) bool {
	if c.Request().ProtoMajor != 1 || a.ExpiresIn <= 0 {
		return false
	}
	header := c.Response().Header().Clone()
	// Through every wrapper the middleware put around the writer.
	conn, _, err := http.NewResponseController(c.Response()).Hijack()
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conn, p.header, p.last = conn, header, a
	p.deadline = time.AfterFunc(wait, func() {
		p.mu.Lock()
		p.over = true
		p.mu.Unlock()
		p.wake()
	})
	p.timer = time.AfterFunc(a.ExpiresIn+expirySlack, p.wake)
	if p.again {
		// Poked since the first read: read again now.
		p.again = false
		go p.run()
		return true
	}
	p.running = false
	return true
}

// close lets a waiter that was not parked go.
func (p *parkedWait) close() { p.sub.Close() }

// wake starts a re-read, or notes that one more is due.
func (p *parkedWait) wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	if p.running {
		p.again = true
		return
	}
	p.running = true
	go p.run()
}

// run reads the item until nothing new is due, then answers it if it
// settled, the wait is over or the hub closed; otherwise it sleeps until
// the item's expiry (by the database's clock) or the next poke.
func (p *parkedWait) run() {
	for {
		if isClosed(p.h.Hub.Closed()) {
			// Shutting down: the pool may already be gone, so the item is
			// answered as last read — still pending, as when a wait
			// elapses — and the runtime asks the next process.
			p.mu.Lock()
			p.done = true
			last := p.last
			p.mu.Unlock()
			p.finish(last, nil)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), parkTimeout)
		a, err := p.h.DB.ApprovalForKey(ctx, p.id, p.key)
		if err == nil {
			p.mu.Lock()
			p.last = a
			p.mu.Unlock()
		}
		if err == nil && a.Status == approval.StatusPending && a.ExpiresIn <= 0 && !p.triedExpiry {
			// Due by the database's clock: expire it now, then read again.
			p.triedExpiry = true
			if err = p.h.DB.ExpireIfDue(ctx, a.ID); err == nil {
				cancel()
				continue
			}
		}
		cancel()
		p.mu.Lock()
		closed := isClosed(p.h.Hub.Closed())
		if err != nil || a.Status != approval.StatusPending || p.over || closed {
			p.done = true
			p.mu.Unlock()
			p.finish(a, err)
			return
		}
		sleep := a.ExpiresIn + expirySlack
		if a.ExpiresIn <= 0 {
			sleep, p.triedExpiry = dueRecheck, false
		}
		if p.timer == nil {
			p.timer = time.AfterFunc(sleep, p.wake)
		} else {
			p.timer.Reset(sleep)
		}
		if p.again {
			p.again = false
			p.mu.Unlock()
			continue
		}
		p.running = false
		p.mu.Unlock()
		return
	}
}

// finish writes the answer — the item, or a refusal for a failed read —
// and lets the connection go.
func (p *parkedWait) finish(a db.Approval, err error) {
	p.sub.Close()
	p.deadline.Stop()
	if p.timer != nil {
		p.timer.Stop()
	}
	status, body := http.StatusOK, any(p.h.toApprovalJSON(a))
	if err != nil {
		status = http.StatusServiceUnavailable
		body = map[string]any{"error": map[string]string{"code": string(approval.CodeApprovalUnavailable),
			"message": "The item could not be read; ask again."}}
	}
	_ = writeParked(p.conn, p.header, status, body)
	_ = p.conn.Close()
}

// writeParked writes one HTTP/1.1 response on conn: header (the
// middleware's), the JSON of body, and Connection: close.
func writeParked(conn net.Conn, header http.Header, status int, body any) error {
	js, err := json.Marshal(body)
	if err != nil {
		return err
	}
	js = append(js, '\n')
	h := header.Clone()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	h.Set("Content-Length", fmt.Sprint(len(js)))
	h.Set("Connection", "close")
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	_ = h.Write(&b)
	b.WriteString("\r\n")
	b.Write(js)
	_ = conn.SetWriteDeadline(time.Now().Add(parkTimeout))
	_, err = conn.Write(b.Bytes())
	return err
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
