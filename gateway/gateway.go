// Package gateway is an MCP server that stands in front of another MCP
// server (the upstream) and asks Countersign before any tool call reaches
// it. An MCP client launches the gateway in place of the real server; the
// gateway starts or connects to the upstream, registers its tools as one
// connector, checks every tools/call, and passes everything else through.
//
// Fail closed: a call reaches the upstream only after Countersign allowed
// it. Countersign unreachable or answering something the client does not
// understand ends in an isError result with code policy_unavailable.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults for Options.
const (
	DefaultHold          = 45 * time.Second
	DefaultProgressEvery = 5 * time.Second
)

// DefaultCallIDMeta are the tools/call _meta keys whose value is the
// client's own id for the call, tried in order. Claude Code sends the
// model's tool-use id as claudecode/toolUseId.
var DefaultCallIDMeta = []string{"claudecode/toolUseId"}

// Options configure a Gateway.
type Options struct {
	Connector string         // the connector the upstream's tools are registered as
	Client    *client.Client // Countersign, with a runtime API key
	User      string         // OIDC subject of the person whose calls these are
	// Upstream returns a fresh transport to the upstream server; it is
	// called at start and again after the upstream stopped.
	Upstream func() (mcp.Transport, error)
	// Hold is how long a call waits for a person before it returns the
	// link result (default DefaultHold). Clients abort slow calls.
	Hold time.Duration
	// ProgressEvery is the interval of progress notifications while a call
	// waits, when the client gave a progress token (default DefaultProgressEvery).
	ProgressEvery time.Duration
	CallIDMeta    []string // default DefaultCallIDMeta
	Version       string   // reported to the client and the upstream
	Log           *slog.Logger
}

// Gateway serves one MCP client in front of one upstream.
type Gateway struct {
	opt     Options
	up      *upstream
	session string // this process's session id, when the transport has none
	seq     atomic.Int64
	synced  atomic.Bool
	// mirror is set once the client-facing server exists; the upstream may
	// announce changes before that.
	mirror atomic.Pointer[mirror]
}

// New checks the options and fills in the defaults.
func New(opt Options) (*Gateway, error) {
	if opt.Connector == "" || opt.Client == nil || opt.User == "" || opt.Upstream == nil {
		return nil, errors.New("gateway: connector, client, user and upstream are required")
	}
	if opt.Hold <= 0 {
		opt.Hold = DefaultHold
	}
	if opt.ProgressEvery <= 0 {
		opt.ProgressEvery = DefaultProgressEvery
	}
	if opt.CallIDMeta == nil {
		opt.CallIDMeta = DefaultCallIDMeta
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	g := &Gateway{opt: opt, session: "mcp-" + hex.EncodeToString(b)}
	g.up = &upstream{connect: opt.Upstream, log: opt.Log, version: opt.Version, onToolsChanged: g.toolsChanged,
		onResourceUpdated: g.resourceUpdated}
	return g, nil
}

// Serve connects to the upstream, registers its tools, and serves the
// client on t until the client goes away or ctx ends. The upstream is
// stopped before Serve returns.
func (g *Gateway) Serve(ctx context.Context, t mcp.Transport) error {
	defer g.up.close()
	cs, err := g.up.session(ctx)
	if err != nil {
		return fmt.Errorf("start the upstream server: %w", err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "countersign-mcp", Version: g.opt.Version},
		&mcp.ServerOptions{
			Capabilities:     capabilities(cs.InitializeResult()),
			Instructions:     instructions(cs.InitializeResult()),
			Logger:           slog.New(quieter{g.opt.Log.Handler(), slog.LevelWarn}),
			SubscribeHandler: g.subscribe,
			UnsubscribeHandler: func(ctx context.Context, r *mcp.UnsubscribeRequest) error {
				up, err := g.up.session(ctx)
				if err != nil {
					return err
				}
				return up.Unsubscribe(ctx, r.Params)
			},
		})
	server.AddReceivingMiddleware(g.middleware)
	g.mirror.Store(&mirror{server: server})
	if err := g.syncCatalog(ctx, cs); err != nil {
		// Calls still fail closed; the next call tries again.
		g.opt.Log.Warn("could not register the upstream's tools with Countersign", "connector", g.opt.Connector, "err", g.redact(err.Error()))
	}
	err = server.Run(ctx, t)
	// The client going away (stdin EOF, a closed pipe) or a signal is the
	// normal end.
	if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return err
}

// capabilities are the upstream's, with tool list changes always announced
// (the gateway re-registers the catalog and tells the client).
func capabilities(init *mcp.InitializeResult) *mcp.ServerCapabilities {
	caps := &mcp.ServerCapabilities{}
	if init != nil && init.Capabilities != nil {
		c := *init.Capabilities
		caps = &c
	}
	caps.Tools = &mcp.ToolCapabilities{ListChanged: true}
	return caps
}

func instructions(init *mcp.InitializeResult) string {
	if init == nil {
		return ""
	}
	return init.Instructions
}

// conversation is the MCP session: the transport's session id where it has
// one, else one id per gateway process (a stdio client runs one process per
// session).
func (g *Gateway) conversation(ss *mcp.ServerSession) string {
	if ss != nil {
		if id := ss.ID(); id != "" && len(id) <= 150 {
			return "mcp-" + id
		}
	}
	return g.session
}

// quieter passes on only records at min or above: the SDK logs every
// session's start and end at info, which is noise on a client's stderr.
type quieter struct {
	slog.Handler
	min slog.Level
}

func (q quieter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= q.min && q.Handler.Enabled(ctx, l)
}

func (q quieter) WithAttrs(a []slog.Attr) slog.Handler {
	return quieter{q.Handler.WithAttrs(a), q.min}
}

func (q quieter) WithGroup(name string) slog.Handler {
	return quieter{q.Handler.WithGroup(name), q.min}
}
