// Package gateway stands in front of an MCP server (the upstream) and asks
// Countersign before any tool call reaches it. An MCP client launches the
// gateway in place of the real server; the gateway starts or connects to
// the upstream and relays the JSON-RPC messages of both sides unchanged —
// requests, responses and notifications, whichever side sends them — except
// the client's tools/call requests, which are checked first and reach the
// upstream only when allowed.
//
// The relay works on JSON-RPC frames, not on the MCP SDK's typed messages:
// the typed layer drops fields it does not know (a tool's execution, tasks)
// and adds empty ones, and a gateway in front of every server must not
// change what either side says. Its own transports (Frames for stdio and a
// child's pipes, a Streamable HTTP client) keep each message's bytes, so a
// relayed message is written exactly as it was read, at any size up to
// Options.MaxFrame.
//
// Fail closed: a call reaches the upstream only after Countersign allowed
// it. Countersign unreachable or answering something the client does not
// understand ends in an isError result.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	// called when the client initializes and again after the upstream
	// stopped.
	Upstream func() (mcp.Transport, error)
	// Hold is how long a call waits for a person before it returns the
	// link result (default DefaultHold). Clients abort slow calls.
	Hold time.Duration
	// ProgressEvery is the interval of progress notifications while a call
	// waits, when the client gave a progress token (default DefaultProgressEvery).
	ProgressEvery time.Duration
	CallIDMeta    []string // default DefaultCallIDMeta
	// ConversationMeta are tools/call _meta keys whose value is the
	// client's own conversation id, tried in order (default none).
	ConversationMeta []string
	// MaxFrame is the largest JSON-RPC message the gateway reads from
	// either side (default DefaultMaxFrame). A larger request gets an error
	// of its own and the session goes on.
	MaxFrame int
	// Tasks, when set, keeps MCP tasks: a client that declares the tasks
	// capability gets a task for a call that needs a person (see tasks.go),
	// picked up by any gateway process with the same store. Nil: every
	// client gets hold-and-retry.
	Tasks   *TaskStore
	Version string // the gateway's version, for the log
	Log     *slog.Logger
}

// Gateway serves one MCP client in front of one upstream.
type Gateway struct {
	opt     Options
	session string // this process's id, part of call ids the client does not give
	seq     atomic.Int64
	ownSeq  atomic.Int64
	synced  atomic.Bool
	syncMu  sync.Mutex
	// tasksOffered: the gateway told the client it serves tasks for
	// tools/call (the client declared tasks, the server has none).
	tasksOffered atomic.Bool

	client mcp.Connection
	up     *upstream

	mu        sync.Mutex
	initReq   *jsonrpc.Request // the client's initialize, replayed to a restarted upstream
	initDone  bool             // the client sent notifications/initialized
	clientIni initializeParams
	serverIni initializeResult
	tools     map[string]bool                   // the upstream's tool names, once listed
	refused   map[string]string                 // the listed tools Countersign refused, with why
	display   map[string]string                 // the display name each tool was registered with
	held      map[string]*heldCall              // the client's tools/call being checked, by request id
	own       map[string]chan *jsonrpc.Response // the gateway's own requests awaiting an answer
	fwd       map[string]forwarded              // the client's requests at the upstream, by id
	driving   map[string]context.CancelFunc     // the tasks this process follows, by task id
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
	if opt.MaxFrame <= 0 {
		opt.MaxFrame = DefaultMaxFrame
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
	g := &Gateway{opt: opt, session: "mcp-" + hex.EncodeToString(b), held: map[string]*heldCall{},
		own: map[string]chan *jsonrpc.Response{}, fwd: map[string]forwarded{},
		driving: map[string]context.CancelFunc{}}
	g.up = &upstream{g: g, connect: opt.Upstream}
	return g, nil
}

// Serve relays between the client on t and the upstream until the client
// goes away or ctx ends. The upstream is started when the client sends
// initialize, and stopped before Serve returns.
func (g *Gateway) Serve(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer g.up.close()
	if f, ok := t.(maxFrameSetter); ok {
		f.setMaxFrame(g.opt.MaxFrame)
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	g.client = conn
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			// The client going away (stdin EOF, a closed pipe) or a signal
			// is the normal end.
			if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
				return nil
			}
			return err
		}
		if g.unreadable(ctx, msg, true) {
			continue
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			g.fromClient(ctx, m)
		case *jsonrpc.Response:
			if !g.ownAnswer(m) {
				g.up.send(ctx, m)
			}
		}
	}
}
