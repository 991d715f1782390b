package db_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

// freezingProxy forwards TCP to target; freeze stops moving bytes on the
// connections open now without closing them, as a lost host or a dropped
// route does. Connections made later forward normally.
type freezingProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	frozen []chan struct{}
}

func newFreezingProxy(t *testing.T, target string) *freezingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			stop := make(chan struct{})
			p.mu.Lock()
			p.frozen = append(p.frozen, stop)
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					select {
					case <-stop: // hold everything, close nothing
						<-make(chan struct{})
					default:
					}
					if n > 0 {
						if _, werr := dst.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						if err != io.EOF {
							return
						}
						dst.Close()
						return
					}
				}
			}
			go pipe(up, c)
			go pipe(c, up)
		}
	}()
	return p
}

func (p *freezingProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.frozen {
		close(s)
	}
	p.frozen = nil
}

// A listening connection that stops answering without closing is noticed
// and replaced, and a change made while it was silent reaches the waiter.
func TestHubReplacesSilentConnection(t *testing.T) {
	store, u := testenv.OpenDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pu, _ := url.Parse(u)
	proxy := newFreezingProxy(t, pu.Host)
	pu.Host = proxy.ln.Addr().String()
	hub := db.NewHub(pu.String(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	hub.SetHealthCheck(200 * time.Millisecond)
	hub.SetRetryAfter(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-hub.Ready()
	sub := hub.Subscribe(db.ApprovalKey("item"))
	defer sub.Close()

	proxy.freeze()
	if _, err := store.Pool.Exec(ctx, `SELECT pg_notify($1, '{"a":"item"}')`, db.NotifyChannel); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.C:
	case <-time.After(20 * time.Second):
		t.Fatal("the listener kept a connection that no longer answers; the change was never heard")
	}
	if hub.Reconnects() < 1 {
		t.Fatal("poked without reconnecting")
	}
}
