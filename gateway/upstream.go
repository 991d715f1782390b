package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errUpstreamStopped: the upstream went away; the next call starts it again.
var errUpstreamStopped = errors.New("gateway: the upstream server stopped")

// upstream is the connection to the real server. It is (re)connected
// lazily: after the upstream stopped, the next request starts it again.
type upstream struct {
	connect           func() (mcp.Transport, error)
	log               *slog.Logger
	version           string
	onToolsChanged    func()
	onResourceUpdated func(context.Context, *mcp.ResourceUpdatedNotificationParams)

	mu     sync.Mutex
	cs     *mcp.ClientSession
	closed bool
	starts int // how many times the upstream was connected
}

// session returns the live session, connecting first when there is none.
// A fresh connection after the first one announces a tool change, so that
// the catalog is registered again.
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil, errUpstreamStopped
	}
	if u.cs != nil {
		return u.cs, nil
	}
	t, err := u.connect()
	if err != nil {
		return nil, err
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "countersign-mcp", Version: u.version}, &mcp.ClientOptions{
		// No roots, sampling or elicitation: the gateway has none of its own
		// to offer the upstream.
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			go u.onToolsChanged()
		},
		ResourceUpdatedHandler: func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			u.onResourceUpdated(ctx, r.Params)
		},
	})
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	u.cs = cs
	u.starts++
	if u.starts > 1 {
		u.log.Info("upstream server restarted")
		go u.onToolsChanged()
	}
	go func() {
		err := cs.Wait()
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.cs == cs {
			u.cs = nil
			if !u.closed {
				u.log.Warn("upstream server stopped; it starts again on the next call", "err", err)
			}
		}
	}()
	return cs, nil
}

// lost forgets cs if it is still the current session (a call on it failed
// because the connection is gone).
func (u *upstream) lost(cs *mcp.ClientSession) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs == cs {
		u.cs = nil
	}
	go cs.Close()
}

// close stops the upstream (a child process: stdin closed, then SIGTERM,
// then SIGKILL) and refuses new connections.
func (u *upstream) close() {
	u.mu.Lock()
	cs := u.cs
	u.cs, u.closed = nil, true
	u.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}
