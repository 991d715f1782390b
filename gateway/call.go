package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeUpstreamUnavailable: the call was allowed but the upstream server
// could not run it (it stopped or could not be started).
const CodeUpstreamUnavailable = "upstream_unavailable"

// Meta keys of the gateway's own isError results.
const (
	MetaCode       = "countersign/code"
	MetaApprovalID = "countersign/approvalId"
	MetaURL        = "countersign/url"
)

// callTool checks one tools/call with Countersign and forwards it only
// when allowed.
func (g *Gateway) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	args, ok := arguments(p.Arguments)
	if !ok {
		return refused(client.Outcome{Code: client.CodePolicyUnavailable,
			Message: "The arguments of this call are not a JSON object, so it was not run."}), nil
	}
	if !g.synced.Load() {
		if cs, err := g.up.session(ctx); err == nil {
			_ = g.syncCatalog(ctx, cs)
		}
	}
	conv := g.conversation(req.Session)
	call := client.Call{CallID: g.callID(conv, p.Meta), User: g.opt.User, ConversationID: conv,
		// An MCP session has no turns; the session is the closest thing.
		TurnID: conv, Connector: g.opt.Connector, Tool: p.Name, Arguments: string(args), AttachToPending: true}
	out, err := g.gate(ctx, req, call)
	if err != nil {
		g.opt.Log.Warn("check failed; the call does not run", "tool", p.Name, "call_id", call.CallID, "err", g.redact(err.Error()))
	}
	if !out.Allowed {
		out.Message = g.redact(out.Message)
		return refused(out), nil
	}
	return g.forward(ctx, p, args)
}

// redact replaces the API key in a message from elsewhere (the server,
// the network) before the client or the log sees it: the model reads the
// results, and a client may show the gateway's log to it too.
func (g *Gateway) redact(s string) string {
	if k := g.opt.Client.APIKey; len(k) >= 8 {
		return strings.ReplaceAll(s, k, "[API key]")
	}
	return s
}

// arguments is the argument object as the client sent it, without
// insignificant whitespace: the text Countersign digests and the bytes the
// upstream receives are then the same (the SDK writes a json.RawMessage
// compacted, so compacting first keeps them identical).
func arguments(raw json.RawMessage) ([]byte, bool) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return []byte("{}"), true
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil || b.Len() == 0 || b.Bytes()[0] != '{' {
		return nil, false
	}
	return b.Bytes(), true
}

// callID is the client's own id for the call from _meta where it sends
// one, else the session and the call's number in it. (JSON-RPC ids are
// unique only among requests in flight, so they are not used.)
func (g *Gateway) callID(conv string, meta mcp.Meta) string {
	for _, k := range g.opt.CallIDMeta {
		if s, ok := meta[k].(string); ok && usableID(s) {
			return s
		}
	}
	return conv + "/" + strconv.FormatInt(g.seq.Add(1), 10)
}

func usableID(s string) bool {
	return s != "" && len(s) <= approval.MaxIDChars && strings.TrimSpace(s) != "" &&
		strings.IndexFunc(s, unicode.IsControl) < 0
}

// gate asks Countersign and waits for a person at most Hold. While it
// waits, the client is shown the item's link (progress, URL elicitation).
// It is one check, followed by waiting on that very item: asking again
// could open a new item if the person decided in between.
//
// The whole check is bounded too: a Countersign that accepts the request
// and never answers must not hold the client's call until the client gives
// up (the call does not run either way; this way the model is told).
func (g *Gateway) gate(ctx context.Context, req *mcp.CallToolRequest, call client.Call) (client.Outcome, error) {
	ctx, stop := context.WithTimeout(ctx, g.opt.Hold+max(g.opt.Hold/5, 2*time.Second))
	defer stop() // ends the progress notifications and the elicitation
	return g.opt.Client.GateNotify(ctx, call, g.opt.Hold, func(pending client.Outcome) {
		g.whileWaiting(ctx, req, pending)
	})
}

// whileWaiting sends progress notifications when the client gave a
// progress token, and offers the item's link by URL elicitation when the
// client supports it, until ctx ends.
func (g *Gateway) whileWaiting(ctx context.Context, req *mcp.CallToolRequest, pending client.Outcome) {
	ss := req.Session
	msg := "Waiting for approval in Countersign"
	if pending.URL != "" {
		msg += " at " + pending.URL
	}
	if token := req.Params.GetProgressToken(); token != nil {
		go func() {
			t := time.NewTicker(g.opt.ProgressEvery)
			defer t.Stop()
			for n := 1; ; n++ {
				if err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg}); err != nil && ctx.Err() == nil {
					g.opt.Log.Debug("progress notification", "err", err)
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	if pending.URL != "" && offersURLElicitation(ss) {
		go func() {
			// A convenience only: the decision is made by the signed-in
			// owner in Countersign, whatever the client answers here.
			_, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "url", URL: pending.URL, ElicitationID: pending.ApprovalID,
				Message: "This tool call needs your approval in Countersign."})
			if err != nil && ctx.Err() == nil {
				g.opt.Log.Debug("url elicitation", "err", err)
			}
		}()
	}
}

// offersURLElicitation: the client supports URL elicitation and its
// protocol version lets a server send a request while serving one (from
// 2026-07-28 on that takes a multi round-trip result, which a call held
// for a person does not fit).
func offersURLElicitation(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion < "2026-07-28" && ip.Capabilities != nil &&
		ip.Capabilities.Elicitation != nil && ip.Capabilities.Elicitation.URL != nil
}

// forward sends the allowed call upstream with exactly the checked
// argument bytes and returns the upstream's result as it is.
func (g *Gateway) forward(ctx context.Context, p *mcp.CallToolParamsRaw, args []byte) (*mcp.CallToolResult, error) {
	cs, err := g.up.session(ctx)
	if err != nil {
		g.opt.Log.Error("upstream server unavailable", "err", err)
		return refused(client.Outcome{Code: CodeUpstreamUnavailable,
			Message: "The tool's server could not be started, so this call did not run. Tell the user; it is tried again on the next call."}), nil
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: forwardedMeta(p.Meta), Name: p.Name, Arguments: json.RawMessage(args)})
	if err != nil && ctx.Err() == nil && !isRPCError(err) {
		g.up.lost(cs)
		g.opt.Log.Error("upstream server failed during a call", "tool", p.Name, "err", err)
		return refused(client.Outcome{Code: CodeUpstreamUnavailable,
			Message: "The tool's server stopped while running this call, so it may or may not have taken effect. Tell the user; the server is started again on the next call."}), nil
	}
	return res, err
}

// isRPCError: the upstream answered with a JSON-RPC error (it is alive).
func isRPCError(err error) bool {
	var w *jsonrpc.Error
	return errors.As(err, &w)
}

// refused is the isError result for a call that did not run.
func refused(out client.Outcome) *mcp.CallToolResult {
	meta := mcp.Meta{MetaCode: out.Code}
	if out.ApprovalID != "" {
		meta[MetaApprovalID] = out.ApprovalID
	}
	if out.URL != "" {
		meta[MetaURL] = out.URL
	}
	return &mcp.CallToolResult{Meta: meta, IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: out.Message}}}
}
