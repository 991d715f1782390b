package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// gate asks Countersign and waits for a person at most Hold. While it
// waits, the client is shown the item's link (progress, URL elicitation).
// It is one check, followed by waiting on that very item: asking again
// could open a new item if the person decided in between.
//
// The whole check is bounded too: a Countersign that accepts the request
// and never answers must not hold the client's call until the client gives
// up (the call does not run either way; this way the model is told).
func (g *Gateway) gate(ctx context.Context, m *jsonrpc.Request, p callParams, call client.Call) (client.Outcome, error) {
	ctx, stop := context.WithTimeout(ctx, g.opt.Hold+max(g.opt.Hold/5, 2*time.Second))
	defer stop() // ends the progress notifications and the elicitation
	return g.opt.Client.GateNotify(ctx, call, g.opt.Hold, func(pending client.Outcome) {
		g.whileWaiting(ctx, p, pending)
	})
}

// whileWaiting sends progress notifications when the client gave a
// progress token, and offers the item's link by URL elicitation when the
// client supports it, until ctx ends.
func (g *Gateway) whileWaiting(ctx context.Context, p callParams, pending client.Outcome) {
	msg := "Waiting for approval in Countersign"
	if pending.URL != "" {
		msg += " at " + pending.URL
	}
	if token := p.Meta["progressToken"]; len(token) > 0 {
		go func() {
			t := time.NewTicker(g.opt.ProgressEvery)
			defer t.Stop()
			for n := 1; ; n++ {
				params, _ := json.Marshal(struct {
					Token    json.RawMessage `json:"progressToken"`
					Progress int             `json:"progress"`
					Message  string          `json:"message"`
				}{token, n, msg})
				if ctx.Err() != nil {
					return
				}
				g.toClient(ctx, &jsonrpc.Request{Method: methodProgress, Params: params})
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	if pending.URL != "" && g.offersURLElicitation() {
		go g.elicitLink(ctx, pending)
	}
}

// elicitLink offers the item's link by URL elicitation once the call has
// waited elicitAfter, and withdraws the request when the wait ends first.
// A convenience only: the decision is made by the signed-in owner in
// Countersign, whatever the client answers here.
func (g *Gateway) elicitLink(ctx context.Context, pending client.Outcome) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(elicitAfter):
	}
	req, ch, err := g.ownRequest(methodElicit, map[string]string{"mode": "url", "url": pending.URL,
		"elicitationId": pending.ApprovalID, "message": "This tool call needs your approval in Countersign."})
	if err != nil {
		return
	}
	defer g.forget(req.ID)
	g.toClient(ctx, req)
	select {
	case <-ch:
	case <-ctx.Done():
		params, _ := json.Marshal(map[string]any{"requestId": req.ID.Raw(), "reason": "The call is no longer waiting for approval."})
		g.toClient(context.WithoutCancel(ctx), &jsonrpc.Request{Method: methodCancelled, Params: params})
	}
}

// offersURLElicitation: the client supports URL elicitation and its
// protocol version lets a server send a request while serving one (from
// 2026-07-28 on that takes a multi round-trip result, which a call held
// for a person does not fit).
func (g *Gateway) offersURLElicitation() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	ip := g.clientIni
	return ip.ProtocolVersion != "" && ip.ProtocolVersion < "2026-07-28" &&
		ip.Capabilities.Elicitation != nil && ip.Capabilities.Elicitation.URL != nil
}

// conversation is the client's own conversation id from _meta where it
// sends one (Options.ConversationMeta). Otherwise it is the same for every
// gateway process of this connector that the same client (by the name it
// gives in initialize) starts in the same working directory: clients that
// start the gateway once per call still find the item a call opened when
// they make it again. The key and the user are part of every match too.
func (g *Gateway) conversation(meta map[string]json.RawMessage) string {
	if s := metaString(meta, g.opt.ConversationMeta); s != "" {
		return s
	}
	g.mu.Lock()
	name := g.clientIni.ClientInfo.Name
	g.mu.Unlock()
	if name == "" {
		// Protocol versions without initialize name the client in each
		// request's _meta.
		var info struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(meta["io.modelcontextprotocol/clientInfo"], &info)
		name = info.Name
	}
	wd, _ := os.Getwd()
	sum := sha256.Sum256([]byte(name + "\x00" + wd))
	return "mcp/" + g.opt.Connector + "/" + hex.EncodeToString(sum[:6])
}

// turnID is the call itself — its tool and arguments — on day t (UTC):
// MCP has no turns. The turn is what a cancel ends (exactly this call's
// item) and where repeated rejections of the same call are counted (for
// the rest of the day).
func turnID(tool string, args []byte, t time.Time) string {
	sum := sha256.Sum256([]byte(tool + "\x00" + approval.Digest(string(args))))
	return "call/" + hex.EncodeToString(sum[:8]) + "/" + t.UTC().Format("20060102")
}
