package gateway

import (
	"context"
	"strconv"

	"github.com/countersign/countersign/client"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Codes of the gateway's answers about frames it does not relay.
const (
	// CodeFrameTooLarge: a request (or an answer to one) is larger than
	// Options.MaxFrame; it was not relayed.
	CodeFrameTooLarge = "frame_too_large"
	// CodeResultTooLarge: the upstream ran the call, but its answer is
	// larger than Options.MaxFrame and was not relayed.
	CodeResultTooLarge = "result_too_large"
)

// unreadable answers a message that was not read whole (over the frame
// limit) or is not JSON-RPC, and says whether msg was one. Only the
// request concerned fails; the session goes on.
func (g *Gateway) unreadable(ctx context.Context, msg jsonrpc.Message, fromClient bool) bool {
	var extra any
	var reqID jsonrpc.ID
	var method string
	isResponse := false
	switch m := msg.(type) {
	case *jsonrpc.Request:
		extra, reqID, method = m.Extra, m.ID, m.Method
	case *jsonrpc.Response:
		extra, reqID, isResponse = m.Extra, m.ID, true
	}
	side := "the upstream server"
	if fromClient {
		side = "the client"
	}
	switch x := extra.(type) {
	case badFrame:
		g.opt.Log.Warn("dropped a message that is not JSON-RPC", "from", side, "err", x.err)
		return true
	case frameTooLarge:
		g.opt.Log.Warn("dropped a message larger than the frame limit", "from", side, "bytes", x.size,
			"limit", x.limit, "method", method, "id", reqID.Raw())
		switch {
		case isResponse:
			g.answerTooLarge(ctx, reqID, x, fromClient)
		case reqID.IsValid() && fromClient:
			g.toClient(ctx, errorAnswer(reqID, jsonrpc.CodeInvalidRequest, "The "+methodOr(method)+" request is "+sizeText(x.size)+
				", more than the "+sizeText(x.limit)+" countersign mcp relays (--max-frame), so it was not sent to the server.", CodeFrameTooLarge))
		case reqID.IsValid():
			g.up.send(ctx, &jsonrpc.Response{ID: reqID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "The request is " + sizeText(x.size) + ", more than the " + sizeText(x.limit) + " countersign mcp relays; it was not sent to the client."}})
		}
		return true
	}
	return false
}

func methodOr(m string) string {
	if m == "" {
		return "JSON-RPC"
	}
	return strconv.Quote(m)
}

// answerTooLarge follows an over-limit answer: the request it answers
// gets an error instead, on the side that asked.
func (g *Gateway) answerTooLarge(ctx context.Context, id jsonrpc.ID, x frameTooLarge, fromClient bool) {
	tooLarge := &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: "The answer is " + sizeText(x.size) + ", more than the " + sizeText(x.limit) + " countersign mcp relays (--max-frame)."}
	if g.ownAnswer(&jsonrpc.Response{ID: id, Error: tooLarge}) {
		return
	}
	if fromClient {
		g.up.send(ctx, &jsonrpc.Response{ID: id, Error: tooLarge})
		return
	}
	g.mu.Lock()
	f, ok := g.fwd[idKey(id)]
	delete(g.fwd, idKey(id))
	g.mu.Unlock()
	switch {
	case !ok:
	case f.method == methodCallTool:
		// The call ran: its effect stands, only its answer is missing.
		g.toClient(ctx, resultAnswer(id, client.Outcome{Code: CodeResultTooLarge,
			Message: "The tool ran, but its answer is " + sizeText(x.size) + ", more than the " + sizeText(x.limit) +
				" countersign mcp relays, so it cannot be shown. Do not run it again as it is; ask for less (a part, a range, a smaller page)."}))
	default:
		g.toClient(ctx, errorAnswer(id, jsonrpc.CodeInternalError, tooLarge.Message, CodeResultTooLarge))
	}
}
