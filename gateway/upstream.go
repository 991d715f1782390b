package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errUpstreamStopped: the gateway is stopping; nothing more is sent upstream.
var errUpstreamStopped = errors.New("gateway: the upstream server stopped")

// reinitTimeout bounds initializing a restarted upstream again.
const reinitTimeout = 30 * time.Second

// upstream is the connection to the real server. It is started by the
// client's first request (normally initialize) and, after it stopped, by
// the next request, which first initializes it again with the client's own
// initialize request.
type upstream struct {
	g       *Gateway
	connect func() (mcp.Transport, error)

	closing sync.WaitGroup // connections being closed; close waits for them

	mu     sync.Mutex
	c      mcp.Connection
	closed bool
	starts int // how many times the upstream was connected
}

// conn returns the live connection, starting the upstream when there is
// none. method is the request it is wanted for: any but initialize on a
// restarted upstream first replays the client's initialize.
func (u *upstream) conn(ctx context.Context, method string) (mcp.Connection, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil, errUpstreamStopped
	}
	if u.c != nil {
		return u.c, nil
	}
	t, err := u.connect()
	if err != nil {
		return nil, err
	}
	if f, ok := t.(maxFrameSetter); ok {
		f.setMaxFrame(u.g.opt.MaxFrame)
	}
	// Not ctx: the connection outlives the request that started it.
	c, err := t.Connect(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	u.c = c
	u.starts++
	// Read until the connection ends, not until the request's ctx does.
	go u.read(context.WithoutCancel(ctx), c)
	if u.starts > 1 {
		u.g.opt.Log.Info("upstream server restarted")
		u.g.synced.Store(false)
		if method != methodInitialize {
			if err := u.reinitialize(ctx, c); err != nil {
				u.c = nil
				u.closing.Go(func() { _ = c.Close() })
				return nil, err
			}
		}
	}
	return c, nil
}

// reinitialize replays the client's initialize (and initialized) to a
// restarted upstream; its answer stays with the gateway.
func (u *upstream) reinitialize(ctx context.Context, c mcp.Connection) error {
	g := u.g
	g.mu.Lock()
	init, done := g.initReq, g.initDone
	g.mu.Unlock()
	if init == nil {
		return nil
	}
	req, ch, err := g.ownRequest(methodInitialize, nil)
	if err != nil {
		return err
	}
	defer g.forget(req.ID)
	req.Params = init.Params
	if err := c.Write(ctx, req); err != nil {
		return err
	}
	t := time.NewTimer(reinitTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.Error != nil {
			return r.Error
		}
	case <-t.C:
		return errors.New("gateway: the restarted upstream did not answer initialize")
	case <-ctx.Done():
		return ctx.Err()
	}
	if done {
		return c.Write(ctx, &jsonrpc.Request{Method: methodInitialized, Params: []byte(`{}`)})
	}
	return nil
}

// read relays what the upstream sends until the connection ends.
func (u *upstream) read(ctx context.Context, c mcp.Connection) {
	for {
		msg, err := c.Read(ctx)
		if err != nil {
			u.lost(c, err)
			return
		}
		if u.g.unreadable(ctx, msg, false) {
			continue
		}
		u.g.fromUpstream(ctx, msg)
	}
}

// send relays m to the upstream. A request that cannot be sent is answered
// to the client at once; a notification or an answer for an upstream that
// is not running is dropped (it is not started for them).
func (u *upstream) send(ctx context.Context, m jsonrpc.Message) {
	req, isReq := m.(*jsonrpc.Request)
	call := isReq && req.IsCall()
	var c mcp.Connection
	var err error
	if call {
		c, err = u.conn(ctx, req.Method)
	} else {
		u.mu.Lock()
		c = u.c
		u.mu.Unlock()
		if c == nil {
			return
		}
	}
	if err != nil {
		u.g.opt.Log.Error("upstream server unavailable", "err", err)
		u.g.toClient(ctx, u.g.unavailableAnswer(req.ID, req.Method, false, err))
		return
	}
	if call {
		u.g.mu.Lock()
		u.g.fwd[idKey(req.ID)] = forwarded{id: req.ID, method: req.Method}
		u.g.mu.Unlock()
	}
	if err := c.Write(ctx, m); err != nil {
		u.lost(c, err)
	}
}

// lost forgets c if it is still the current connection and answers the
// client's requests that were waiting on it.
func (u *upstream) lost(c mcp.Connection, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.c != c {
		return
	}
	u.c = nil
	u.closing.Go(func() { _ = c.Close() })
	g := u.g
	if !u.closed {
		g.opt.Log.Warn("upstream server stopped; it starts again on the next request", "err", err)
	}
	g.mu.Lock()
	fwd := g.fwd
	g.fwd = map[string]forwarded{}
	g.mu.Unlock()
	if u.closed {
		return
	}
	for _, f := range fwd {
		if f.own != nil {
			select {
			case f.own <- &jsonrpc.Response{ID: f.id, Error: errUpstreamLost}:
			default:
			}
			continue
		}
		g.toClient(context.Background(), g.unavailableAnswer(f.id, f.method, true, err))
	}
}

// close stops the upstream (a child process: stdin closed, then SIGTERM,
// then SIGKILL) and refuses new connections.
func (u *upstream) close() {
	u.mu.Lock()
	c := u.c
	u.c, u.closed = nil, true
	u.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	// A child that stopped being the current connection is stopped (and
	// reaped) before the gateway exits too.
	u.closing.Wait()
}
