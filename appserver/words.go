package appserver

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// The app-server's decline carries no words. When the person rejected with
// words, the proxy gives them to the model in its next input: a
// turn/steer of the turn the request was in, with Countersign's message
// for the rejection (which quotes the words). The client sees it as any
// steered input (item/started of a userMessage); the answer to the
// proxy's own request is not relayed.

// ownIDs number the proxy's own requests; their ids are strings no client
// would pick.
var ownIDs atomic.Int64

// personsWords is the message for the model when the person rejected with
// words, else "".
func personsWords(out client.Outcome, tool string) string {
	if out.Allowed || approval.ReasonCode(out.Code) != approval.CodeApprovalDenied || out.Message == "" {
		return ""
	}
	if out.Message == approval.Message(approval.CodeApprovalDenied, approval.MessageInput{Tool: tool}) {
		return "" // no words: the decline says it all
	}
	return out.Message
}

// steer sends text to the model as input to the turn.
func (p *Proxy) steer(ctx context.Context, thread, turn, text string) {
	id := "countersign-" + session + "-" + strconv.FormatInt(ownIDs.Add(1), 10)
	b, err := json.Marshal(map[string]any{"id": id, "method": "turn/steer", "params": map[string]any{
		"threadId": thread, "expectedTurnId": turn, "input": []any{map[string]any{"type": "text", "text": text}}}})
	if err != nil || ctx.Err() != nil {
		return
	}
	key := idKey(mustRaw(id))
	p.mu.Lock()
	p.own[key] = true
	p.mu.Unlock()
	if err := p.toServer.write(append(b, '\n')); err != nil {
		p.opt.Log.Warn("could not give the person's words to the model", "err", err)
	}
}

// ownAnswer reports (and forgets) an answer to one of the proxy's own
// requests.
func (p *Proxy) ownAnswer(f frame) bool {
	if f.Method != "" || len(f.ID) == 0 {
		return false
	}
	key := idKey(f.ID)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.own[key] {
		return false
	}
	delete(p.own, key)
	return true
}

func mustRaw(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
