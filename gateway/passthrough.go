package gateway

import (
	"context"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// middleware answers every request the upstream serves: tools/call after
// the check, the rest passed through unchanged. What the SDK answers
// itself (initialize, ping, logging level) stays with it.
func (g *Gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok {
			return g.callTool(ctx, r)
		}
		if !passedThrough(req) {
			return next(ctx, method, req)
		}
		cs, err := g.up.session(ctx)
		if err != nil {
			return nil, err
		}
		if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
			p.SetMeta(forwardedMeta(p.GetMeta()))
		}
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			// The client sees the upstream's tools unchanged: names,
			// schemas, annotations and _meta.
			return cs.ListTools(ctx, r.Params)
		case *mcp.ListResourcesRequest:
			return cs.ListResources(ctx, r.Params)
		case *mcp.ListResourceTemplatesRequest:
			return cs.ListResourceTemplates(ctx, r.Params)
		case *mcp.ReadResourceRequest:
			return cs.ReadResource(ctx, r.Params)
		case *mcp.ListPromptsRequest:
			return cs.ListPrompts(ctx, r.Params)
		case *mcp.GetPromptRequest:
			return cs.GetPrompt(ctx, r.Params)
		case *mcp.CompleteRequest:
			return cs.Complete(ctx, r.Params)
		}
		return next(ctx, method, req)
	}
}

func passedThrough(req mcp.Request) bool {
	switch req.(type) {
	case *mcp.ListToolsRequest, *mcp.ListResourcesRequest, *mcp.ListResourceTemplatesRequest, *mcp.ReadResourceRequest,
		*mcp.ListPromptsRequest, *mcp.GetPromptRequest, *mcp.CompleteRequest:
		return true
	}
	return false
}

// subscribe passes a resource subscription to the upstream; the SDK keeps
// the client's subscription so that resourceUpdated reaches it.
func (g *Gateway) subscribe(ctx context.Context, r *mcp.SubscribeRequest) error {
	cs, err := g.up.session(ctx)
	if err != nil {
		return err
	}
	return cs.Subscribe(ctx, r.Params)
}

func (g *Gateway) resourceUpdated(ctx context.Context, p *mcp.ResourceUpdatedNotificationParams) {
	m := g.mirror.Load()
	if m == nil || p == nil {
		return
	}
	if err := m.server.ResourceUpdated(ctx, p); err != nil {
		g.opt.Log.Debug("resource update", "err", err)
	}
}

// forwardedMeta is the client's _meta for the upstream: without what
// belongs to the client's own connection to the gateway — its progress
// token (the upstream's progress is not relayed) and the protocol's
// per-connection keys (io.modelcontextprotocol/…: the protocol version,
// client info and capabilities the gateway negotiated, not the upstream).
func forwardedMeta(in map[string]any) map[string]any {
	var out map[string]any
	for k, v := range in {
		if k == "progressToken" || strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = v
	}
	return out
}
