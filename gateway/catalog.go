package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncCatalog lists the upstream's tools and registers them as the
// connector. The annotations come from an untrusted server: Countersign
// uses them for the default policy of new tools only.
// syncTimeout bounds one registration of the upstream's tools.
const syncTimeout = 10 * time.Second

func (g *Gateway) syncCatalog(ctx context.Context, cs *mcp.ClientSession) error {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		tools = append(tools, t)
	}
	conn := client.Connector{DisplayName: g.opt.Connector, Kind: "connector", Tools: make([]client.ConnectorTool, 0, len(tools))}
	for _, t := range tools {
		conn.Tools = append(conn.Tools, connectorTool(t))
	}
	// Bounded: a Countersign that never answers must not keep the gateway
	// from serving (calls then fail closed and try the sync again).
	sctx, cancel := context.WithTimeout(ctx, min(syncTimeout, g.opt.Hold))
	defer cancel()
	if err := g.opt.Client.SyncConnector(sctx, g.opt.Connector, conn); err != nil {
		g.synced.Store(false)
		return err
	}
	g.synced.Store(true)
	if m := g.mirror.Load(); m != nil {
		m.set(tools)
	}
	g.opt.Log.Info("registered the upstream's tools", "connector", g.opt.Connector, "tools", len(tools))
	return nil
}

func connectorTool(t *mcp.Tool) client.ConnectorTool {
	ct := client.ConnectorTool{Name: t.Name, DisplayName: cut(t.Title, approval.MaxDisplayNameChars),
		Description: cut(t.Description, approval.MaxDescriptionChars)}
	if a := t.Annotations; a != nil {
		if ct.DisplayName == "" {
			ct.DisplayName = cut(a.Title, approval.MaxDisplayNameChars)
		}
		ct.Annotations = approval.Annotations{ReadOnlyHint: trueOrNil(a.ReadOnlyHint),
			DestructiveHint: a.DestructiveHint, IdempotentHint: trueOrNil(a.IdempotentHint), OpenWorldHint: a.OpenWorldHint}
	}
	return ct
}

// trueOrNil: the SDK reports an absent boolean hint as false, which is the
// protocol's default, so only true is sent.
func trueOrNil(b bool) *bool {
	if !b {
		return nil
	}
	return &b
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// toolsChanged follows the upstream's notifications/tools/list_changed
// (and a restart): register the catalog again and tell the client.
func (g *Gateway) toolsChanged() {
	ctx := context.Background()
	cs, err := g.up.session(ctx)
	if err == nil {
		err = g.syncCatalog(ctx, cs)
	}
	if err != nil {
		g.opt.Log.Warn("could not register the upstream's changed tools", "err", g.redact(err.Error()))
	}
}

// mirror keeps the gateway server's own tool table in step with the
// upstream's, only so that the SDK announces the tools capability and
// sends notifications/tools/list_changed to the client. tools/list and
// tools/call never reach these entries: the middleware answers them.
type mirror struct {
	server *mcp.Server
	mu     sync.Mutex
	names  map[string]bool
}

func (m *mirror) set(tools []*mcp.Tool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := make(map[string]bool, len(tools))
	for _, t := range tools {
		next[t.Name] = true
		m.server.AddTool(&mcp.Tool{Name: t.Name, InputSchema: map[string]any{"type": "object"}}, unreachable)
	}
	var gone []string
	for n := range m.names {
		if !next[n] {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		m.server.RemoveTools(gone...)
	}
	m.names = next
}

func unreachable(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return refused(client.Outcome{Code: client.CodePolicyUnavailable,
		Message: approval.Message(approval.CodePolicyUnavailable, approval.MessageInput{})}), nil
}
