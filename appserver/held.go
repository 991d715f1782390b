package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
)

// heldItem is an approval request being decided through Countersign.
type heldItem struct {
	cancel       context.CancelFunc
	thread, turn string
	resolved     bool // the app-server resolved it itself, or the turn ended
}

// take answers f when it is an approval request the proxy understands, and
// reports whether it did; anything else goes to the client unchanged.
func (p *Proxy) take(ctx context.Context, f frame) bool {
	var (
		q  asked
		ok bool
	)
	switch f.Method {
	case methodCommandApproval:
		q, ok = p.commandRequest(f.Params)
	case methodFileApproval:
		q, ok = p.fileRequest(f.Params)
	case methodPermissionsApproval:
		q, ok = p.permissionsRequest(f.Params)
	}
	if !ok {
		return false
	}
	p.opt.Log.Debug("answering an approval request", "method", f.Method, "params", string(f.Params))
	key := idKey(f.ID)
	hctx, cancel := context.WithCancel(ctx)
	h := &heldItem{cancel: cancel, thread: q.call.ConversationID, turn: q.call.TurnID}
	p.mu.Lock()
	if p.held[key] != nil {
		// The same id twice while the first is held: not a request the
		// proxy can answer twice; the client gets it.
		p.mu.Unlock()
		cancel()
		return false
	}
	p.held[key] = h
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer cancel()
		p.decide(ctx, hctx, f, key, h, q)
	}()
	return true
}

// asked is one approval request as a Countersign call, and how to answer.
type asked struct {
	call   client.Call
	target hook.Target
	// answer is the app-server's decision for an outcome; err not nil means
	// Countersign could not be asked (decline).
	answer func(out client.Outcome, err error) any
	// result, when set, is the whole result instead of {"decision": …}.
	result func(out client.Outcome, err error) map[string]any
}

// decide asks Countersign and answers the app-server, unless the request
// was resolved meanwhile: then its Countersign item is cancelled.
func (p *Proxy) decide(ctx, hctx context.Context, f frame, key string, h *heldItem, q asked) {
	q.call.User = p.opt.User
	q.call.Runtime = p.runtime(q.call.Runtime)
	out, err := p.gate(hctx, q.call, q.target)
	p.mu.Lock()
	if p.held[key] == h {
		delete(p.held, key)
	}
	resolved := h.resolved
	p.mu.Unlock()
	if resolved || ctx.Err() != nil {
		p.cancelItem(h)
		return
	}
	if err != nil {
		p.opt.Log.Warn("Countersign could not decide; answering decline", "method", f.Method, "err", p.redact(err.Error()))
	}
	if q.result != nil {
		p.answer(f, q.result(out, err))
		return
	}
	p.answer(f, map[string]any{"decision": q.answer(out, err)})
	if words := personsWords(out, q.call.Tool); err == nil && words != "" {
		p.steer(ctx, h.thread, h.turn, words)
	}
}

// gate asks once; a tool the server does not know yet is registered and
// asked again (as countersign hook does).
func (p *Proxy) gate(ctx context.Context, call client.Call, t hook.Target) (client.Outcome, error) {
	out, err := p.opt.Client.Gate(ctx, call)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != approval.CodeUnknownTool {
		return out, err
	}
	if _, err := p.opt.Client.RegisterTool(ctx, t.Connector, t.Registration); err != nil {
		return client.Outcome{}, err
	}
	return p.opt.Client.Gate(ctx, call)
}

// resolved follows serverRequest/resolved: a request still held was
// cleaned up by the app-server (its turn ended or was interrupted).
func (p *Proxy) resolved(params json.RawMessage) {
	var n struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &n) != nil || len(n.RequestID) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if h := p.held[idKey(n.RequestID)]; h != nil {
		h.resolved = true
		h.cancel()
	}
}

// interrupted follows the client's turn/interrupt, and turnEnded the
// app-server's turn/completed: what the turn still holds is cancelled.
func (p *Proxy) interrupted(params json.RawMessage) { p.endTurn(params, "threadId", "turnId") }

func (p *Proxy) turnEnded(params json.RawMessage) {
	var n struct {
		ThreadID string `json:"threadId"`
		Turn     struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if json.Unmarshal(params, &n) == nil && n.ThreadID != "" && n.Turn.ID != "" {
		p.cancelTurn(n.ThreadID, n.Turn.ID)
	}
}

func (p *Proxy) endTurn(params json.RawMessage, threadKey, turnKey string) {
	var n map[string]json.RawMessage
	if json.Unmarshal(params, &n) != nil {
		return
	}
	var thread, turn string
	if json.Unmarshal(n[threadKey], &thread) != nil || json.Unmarshal(n[turnKey], &turn) != nil || thread == "" || turn == "" {
		return
	}
	p.cancelTurn(thread, turn)
}

func (p *Proxy) cancelTurn(thread, turn string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.held {
		if h.thread == thread && h.turn == turn {
			h.resolved = true
			h.cancel()
		}
	}
}

// cancelItem cancels the Countersign items of a request nobody waits for.
func (p *Proxy) cancelItem(h *heldItem) {
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	n, err := p.opt.Client.CancelTurn(ctx, p.opt.User, h.thread, h.turn)
	if err != nil {
		p.opt.Log.Warn("could not cancel the item of a request the app-server resolved", "err", p.redact(err.Error()))
		return
	}
	p.opt.Log.Info("the app-server resolved a held request; its item was cancelled", "thread", h.thread, "turn", h.turn, "items_cancelled", n)
}

// runtime is what the card says about the runtime: the client by its
// initialize, through Codex app-server; this machine; the cwd.
func (p *Proxy) runtime(r *client.Runtime) *client.Runtime {
	p.mu.Lock()
	name := p.clientName
	p.mu.Unlock()
	out := approval.Runtime{Client: "Codex app-server", Host: p.host}
	if name != "" {
		out.Client = name + " through Codex app-server"
	}
	if r != nil {
		out.WorkingDirectory = r.WorkingDirectory
	}
	for _, keep := range []func(*approval.Runtime) *string{
		func(r *approval.Runtime) *string { return &r.Client },
		func(r *approval.Runtime) *string { return &r.Host },
		func(r *approval.Runtime) *string { return &r.WorkingDirectory },
	} {
		var one approval.Runtime
		*keep(&one) = *keep(&out)
		if approval.CheckRuntime(one) != nil {
			*keep(&out) = ""
		}
	}
	if out.Client == "" && name != "" {
		out.Client = "Codex app-server" // the client's own name could not be shown
	}
	return &client.Runtime{Client: out.Client, Host: out.Host, WorkingDirectory: out.WorkingDirectory}
}

func (p *Proxy) redact(s string) string {
	if k := p.opt.Client.APIKey; len(k) >= 8 {
		return replaceAll(s, k, "[API key]")
	}
	return s
}
