package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Codes of the gateway's own answers (beside Countersign's).
const (
	// CodeUpstreamUnavailable: the call was allowed but the upstream server
	// could not run it (it stopped or could not be started).
	CodeUpstreamUnavailable = "upstream_unavailable"
	// CodeArgumentsTooLarge: the arguments are larger than MaxArguments.
	CodeArgumentsTooLarge = "arguments_too_large"
	// CodeUnknownTool: the upstream does not list the tool (a JSON-RPC
	// error -32602, as MCP answers an unknown tool).
	CodeUnknownTool = "unknown_tool"
	// CodeToolRefused: Countersign refused the tool when the upstream's
	// catalog was registered (its name or title breaks a rule of the
	// runtime API); the server's other tools work.
	CodeToolRefused = "tool_refused"
	// CodeCountersignUnreachable: Countersign could not be reached or did
	// not answer in time.
	CodeCountersignUnreachable = "countersign_unreachable"
)

// MaxArguments is the largest argument text (bytes of JSON, insignificant
// whitespace removed) a call may carry: what Countersign reads and digests.
const MaxArguments = approval.MaxArgumentsSize

// Meta keys of the gateway's own isError results.
const (
	MetaCode       = "countersign/code"
	MetaApprovalID = "countersign/approvalId"
	MetaURL        = "countersign/url"
)

// elicitAfter: the approval link is offered by URL elicitation only to a
// call still waiting this long, so that the same call made again after
// approval (which runs at once) is not shown a link first.
const elicitAfter = time.Second

// callParams is what the gateway reads of a tools/call; the request goes
// upstream as the client sent it.
type callParams struct {
	Name      string                     `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Meta      map[string]json.RawMessage `json:"_meta"`
}

// heldCall is a tools/call being checked; the client may cancel it.
type heldCall struct {
	cancel    context.CancelFunc
	cancelled bool
}

// startCall checks one tools/call in the background.
func (g *Gateway) startCall(ctx context.Context, m *jsonrpc.Request) {
	var p callParams
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Name == "" {
		g.toClient(ctx, errorAnswer(m.ID, codeInvalidParams, "Invalid params: tools/call needs a tool name.", "invalid_params"))
		return
	}
	hctx, cancel := context.WithCancel(ctx)
	h := &heldCall{cancel: cancel}
	g.mu.Lock()
	g.held[idKey(m.ID)] = h
	g.mu.Unlock()
	go g.call(ctx, hctx, m, p, h)
}

// cancelHeld follows the client's notifications/cancelled for a call being
// checked: the check stops, no answer is sent (MCP: the receiver of a
// cancel does not answer), and the Countersign item is cancelled.
func (g *Gateway) cancelHeld(m *jsonrpc.Request) bool {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.held[idKey(id)]
	if h == nil {
		return false
	}
	h.cancelled = true
	h.cancel()
	return true
}

// call checks one tools/call with Countersign and forwards the client's
// request unchanged only when allowed. ctx is the relay's, hctx the call's.
func (g *Gateway) call(ctx, hctx context.Context, m *jsonrpc.Request, p callParams, h *heldCall) {
	defer h.cancel()
	key := idKey(m.ID)
	// done ends the hold; false when the client cancelled the call.
	done := func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.held[key] == h {
			delete(g.held, key)
		}
		return !h.cancelled
	}
	answer := func(r *jsonrpc.Response) {
		if done() {
			g.toClient(ctx, r)
		}
	}
	args, refusal := g.precheck(hctx, m, p)
	if refusal != nil {
		answer(refusal)
		return
	}
	call := g.clientCall(p, args)
	out, err := g.gate(hctx, m, p, call)
	if !done() {
		g.cancelItem(ctx, call)
		return
	}
	out = g.checkFailed(p.Name, call, out, err)
	if !out.Allowed {
		g.toClient(ctx, resultAnswer(m.ID, out))
		return
	}
	g.up.send(ctx, m)
}

// precheck reads the call's arguments and tells the calls that are not
// asked about at all: the answer to give, or nil and the arguments
// (compact JSON text) to ask about.
func (g *Gateway) precheck(ctx context.Context, m *jsonrpc.Request, p callParams) ([]byte, *jsonrpc.Response) {
	args, ok := arguments(p.Arguments)
	if !ok {
		return nil, resultAnswer(m.ID, client.Outcome{Code: client.CodePolicyUnavailable,
			Message: "The arguments of this call are not a JSON object, so it was not run."})
	}
	if len(args) > MaxArguments {
		return nil, resultAnswer(m.ID, client.Outcome{Code: CodeArgumentsTooLarge, Message: "The arguments of this call to " + p.Name +
			" are " + strconv.Itoa(len(args)) + " bytes, more than the " + strconv.Itoa(MaxArguments) +
			" bytes (1 MiB) Countersign accepts for approval, so it did not run. Do not make it again as it is; make the change in smaller calls."})
	}
	if known, err := g.knownTool(ctx, p.Name); err == nil && !known {
		// Not forwarded: a tool the server does not list may still be one
		// it serves, and it would then run unchecked.
		return nil, errorAnswer(m.ID, codeInvalidParams, "Unknown tool: "+p.Name, CodeUnknownTool)
	}
	if why := g.toolRefused(p.Name); why != "" {
		return nil, resultAnswer(m.ID, client.Outcome{Code: CodeToolRefused, Message: "The tool " + strconv.Quote(p.Name) +
			" of this server cannot be approved through Countersign, so its calls do not run: its " + g.redact(why) +
			" Tell the user; the server's other tools work."})
	}
	return args, nil
}

// clientCall is what Countersign is asked about the call.
func (g *Gateway) clientCall(p callParams, args []byte) client.Call {
	return client.Call{CallID: g.callID(p.Meta), User: g.opt.User, ConversationID: g.conversation(p.Meta),
		TurnID: turnID(p.Name, args, time.Now()), Connector: g.opt.Connector, Tool: p.Name, Arguments: string(args),
		AttachToPending: true, Runtime: g.runtime()}
}

// checkFailed is out as the model is told it: a check that failed on the
// way says Countersign could not be reached; a message of Countersign's
// names the tool as the client does.
func (g *Gateway) checkFailed(name string, call client.Call, out client.Outcome, err error) client.Outcome {
	if err != nil {
		g.opt.Log.Warn("check failed; the call does not run", "tool", name, "call_id", call.CallID, "err", g.redact(err.Error()))
		if unreachable(err) {
			out = client.Outcome{Code: CodeCountersignUnreachable, ApprovalID: out.ApprovalID,
				Message: "Countersign, which approves this tool's calls, could not be reached or did not answer, so this call to " + name +
					" did not run. Tell the user; the same call can be made again once Countersign is reachable."}
		}
	}
	if !out.Allowed {
		out.Message = g.redact(g.byName(name, out))
	}
	return out
}

// byName is out's message naming the tool by the name the client called
// it by, as every other message of the gateway does: Countersign's own
// messages name it by its display name (the server's title). Only a
// message exactly as Countersign writes it for that code is reworded.
func (g *Gateway) byName(name string, out client.Outcome) string {
	g.mu.Lock()
	display := g.display[name]
	g.mu.Unlock()
	if display == "" || display == name {
		return out.Message
	}
	const mark = "\x00"
	code := approval.ReasonCode(out.Code)
	as := approval.Message(code, approval.MessageInput{Tool: display, UserReason: mark})
	want := approval.Message(code, approval.MessageInput{Tool: name, UserReason: mark})
	asHead, asTail, quoted := strings.Cut(as, mark)
	wantHead, wantTail, _ := strings.Cut(want, mark)
	if !quoted {
		// The message does not quote a reason: all or nothing.
		as = approval.Message(code, approval.MessageInput{Tool: display})
		if out.Message == as {
			return approval.Message(code, approval.MessageInput{Tool: name})
		}
		return out.Message
	}
	if words, ok := strings.CutPrefix(out.Message, asHead); ok {
		if words, ok = strings.CutSuffix(words, asTail); ok {
			return wantHead + words + wantTail
		}
	}
	// No reason given: the template without the quote.
	if plain := approval.Message(code, approval.MessageInput{Tool: display}); out.Message == plain {
		return approval.Message(code, approval.MessageInput{Tool: name})
	}
	return out.Message
}

// unreachable: the check failed on the way (no connection, no answer in
// time), not with an answer Countersign gave.
func unreachable(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) || errors.Is(err, context.DeadlineExceeded)
}

// cancelItem cancels the item of a call the client cancelled: the items of
// its turn (the call itself, see turnID) in its conversation, pending or
// approved and not yet claimed. The turn of the day before is cancelled
// too, for an item opened just before midnight (UTC).
func (g *Gateway) cancelItem(ctx context.Context, call client.Call) {
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
	defer stop()
	args := []byte(call.Arguments)
	now := time.Now()
	n := 0
	for _, t := range []time.Time{now, now.Add(-24 * time.Hour)} {
		c, err := g.opt.Client.CancelTurn(ctx, call.User, call.ConversationID, turnID(call.Tool, args, t))
		if err != nil {
			g.opt.Log.Warn("could not cancel the cancelled call's item", "tool", call.Tool, "err", g.redact(err.Error()))
			return
		}
		n += c
	}
	g.opt.Log.Info("the client cancelled a held call", "tool", call.Tool, "items_cancelled", n)
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
// insignificant whitespace: the text Countersign digests. The upstream
// receives the client's request as it was written, the same JSON.
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

// metaString is a string _meta value fit to be an id.
func metaString(meta map[string]json.RawMessage, keys []string) string {
	for _, k := range keys {
		var s string
		if json.Unmarshal(meta[k], &s) == nil && usableID(s) {
			return s
		}
	}
	return ""
}

// callID is the client's own id for the call from _meta where it sends
// one, else this process's id and the call's number in it. (JSON-RPC ids
// are unique only among requests in flight, so they are not used.)
func (g *Gateway) callID(meta map[string]json.RawMessage) string {
	if s := metaString(meta, g.opt.CallIDMeta); s != "" {
		return s
	}
	return g.session + "/" + strconv.FormatInt(g.seq.Add(1), 10)
}

func usableID(s string) bool {
	return s != "" && len(s) <= approval.MaxIDChars && strings.TrimSpace(s) != "" &&
		strings.IndexFunc(s, unicode.IsControl) < 0
}

// resultAnswer is the isError result for a call that did not run.
func resultAnswer(id jsonrpc.ID, out client.Outcome) *jsonrpc.Response {
	b, err := json.Marshal(refused(out))
	if err != nil {
		return errorAnswer(id, codeInternal, "Internal error", client.CodePolicyUnavailable)
	}
	return &jsonrpc.Response{ID: id, Result: b}
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

// unavailableAnswer answers a request the upstream could not take:
// started says whether it had reached the upstream.
func (g *Gateway) unavailableAnswer(id jsonrpc.ID, method string, started bool, err error) *jsonrpc.Response {
	switch {
	case method == methodCallTool && started:
		return resultAnswer(id, client.Outcome{Code: CodeUpstreamUnavailable,
			Message: "The tool's server stopped while running this call, so it may or may not have taken effect. Tell the user; the server is started again on the next call."})
	case method == methodCallTool:
		return resultAnswer(id, client.Outcome{Code: CodeUpstreamUnavailable,
			Message: "The tool's server could not be started, so this call did not run. Tell the user; it is tried again on the next call."})
	case started:
		return errorAnswer(id, codeInternal, "The MCP server stopped before it answered "+method+"; it is started again on the next request.", CodeUpstreamUnavailable)
	}
	msg := "countersign mcp could not start the MCP server"
	if err != nil {
		msg += ": " + g.redact(err.Error())
	}
	return errorAnswer(id, codeInternal, msg+". Check the command after `--` in the client's configuration; it is tried again on the next request.", CodeUpstreamUnavailable)
}
