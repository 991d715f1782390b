package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Methods the relay looks at; every other one only passes through.
const (
	methodInitialize   = "initialize"
	methodDiscover     = "server/discover"
	methodInitialized  = "notifications/initialized"
	methodCallTool     = "tools/call"
	methodListTools    = "tools/list"
	methodCancelled    = "notifications/cancelled"
	methodToolsChanged = "notifications/tools/list_changed"
	methodProgress     = "notifications/progress"
	methodElicit       = "elicitation/create"
)

// ownPrefix starts the ids of the gateway's own requests (to the upstream:
// listing its tools, initializing it again after a restart; to the client:
// the approval link as a URL elicitation). Their answers are the
// gateway's and are not relayed; every other id passes through unchanged.
const ownPrefix = "countersign-mcp-"

// JSON-RPC error codes of the gateway's own error answers.
const (
	codeInvalidParams = jsonrpc.CodeInvalidParams
	codeInternal      = jsonrpc.CodeInternalError
)

// forwarded is a request of the client's that the upstream has not
// answered yet.
type forwarded struct {
	id     jsonrpc.ID
	method string
	// own, for a task's call the gateway forwarded itself, receives the
	// answer (errUpstreamLost when the upstream stopped first).
	own chan *jsonrpc.Response
}

// idKey tells ids apart by type too: the string "1" is not the number 1.
func idKey(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case string:
		return "s:" + v
	case int64:
		return "n:" + strconv.FormatInt(v, 10)
	}
	return fmt.Sprintf("?:%v", id.Raw())
}

// fromClient handles one request or notification the client sent.
func (g *Gateway) fromClient(ctx context.Context, m *jsonrpc.Request) {
	switch m.Method {
	case methodInitialize:
		if m.IsCall() {
			var p initializeParams
			_ = json.Unmarshal(m.Params, &p)
			g.mu.Lock()
			g.initReq, g.clientIni = m, p
			g.mu.Unlock()
		}
	case methodInitialized:
		g.up.send(ctx, m)
		g.mu.Lock()
		g.initDone = true
		g.mu.Unlock()
		go g.syncCatalog(ctx, true)
		return
	case methodCallTool:
		if m.IsCall() {
			if g.offersTasks() && taskAugmented(m.Params) {
				g.startTask(ctx, m)
				return
			}
			g.startCall(ctx, m)
			return
		}
		// A tools/call without an id (or with "id": null) is a
		// notification to the server: it would run with nobody asked
		// and no answer to tell. It is dropped, never forwarded.
		var p callParams
		_ = json.Unmarshal(m.Params, &p)
		g.opt.Log.Warn("dropped a tools/call without an id; it was not checked and did not run", "tool", p.Name)
		return
	case methodCancelled:
		if g.cancelHeld(m) {
			return // the upstream never saw that request
		}
	case methodTasksGet, methodTasksResult, methodTasksList, methodTasksCancel:
		if g.offersTasks() && m.IsCall() {
			g.taskRequest(ctx, m)
			return
		}
	}
	g.up.send(ctx, m)
}

// fromUpstream handles one message the upstream sent: relayed unchanged,
// except answers to the gateway's own requests.
func (g *Gateway) fromUpstream(ctx context.Context, msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if g.ownAnswer(m) {
			return
		}
		g.mu.Lock()
		f := g.fwd[idKey(m.ID)]
		delete(g.fwd, idKey(m.ID))
		g.mu.Unlock()
		if (f.method == methodInitialize || f.method == methodDiscover) && m.Error == nil {
			var r initializeResult
			_ = json.Unmarshal(m.Result, &r)
			if r.ServerInfo.Name == "" {
				// Protocol versions without initialize name the server in
				// each result's _meta.
				r.ServerInfo = r.Meta.ServerInfo
			}
			g.mu.Lock()
			g.serverIni = r
			g.mu.Unlock()
			if f.method == methodDiscover {
				// No notifications/initialized follows: the upstream
				// answers requests from now on.
				go g.syncCatalog(ctx, true)
			}
			m = g.offerTasks(m)
		}
		if f.method == methodListTools && m.Error == nil && g.offersTasks() {
			m = withTaskSupport(m)
		}
		g.toClient(ctx, m)
	case *jsonrpc.Request:
		if m.Method == methodToolsChanged {
			g.synced.Store(false)
			go g.syncCatalog(ctx, true)
		}
		g.toClient(ctx, m)
	}
}

func (g *Gateway) toClient(ctx context.Context, m jsonrpc.Message) {
	if err := g.client.Write(ctx, m); err != nil && ctx.Err() == nil {
		g.opt.Log.Debug("write to the client", "err", err)
	}
}

// ownAnswer delivers m to the gateway's request it answers, if it does.
func (g *Gateway) ownAnswer(m *jsonrpc.Response) bool {
	s, ok := m.ID.Raw().(string)
	if !ok || !strings.HasPrefix(s, ownPrefix) {
		return false
	}
	g.mu.Lock()
	ch := g.own[idKey(m.ID)]
	delete(g.own, idKey(m.ID))
	delete(g.fwd, idKey(m.ID)) // a task's call, forwarded by the gateway
	g.mu.Unlock()
	if ch != nil {
		ch <- m
	}
	return true
}

// ownRequest makes a request of the gateway's own; send writes it (to the
// client or the upstream). The answer's channel has room for one.
func (g *Gateway) ownRequest(method string, params any) (*jsonrpc.Request, chan *jsonrpc.Response, error) {
	id, _ := jsonrpc.MakeID(ownPrefix + strconv.FormatInt(g.ownSeq.Add(1), 10))
	b, err := json.Marshal(params)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan *jsonrpc.Response, 1)
	g.mu.Lock()
	g.own[idKey(id)] = ch
	g.mu.Unlock()
	return &jsonrpc.Request{ID: id, Method: method, Params: b}, ch, nil
}

// forget drops an own request nobody waits for any more.
func (g *Gateway) forget(id jsonrpc.ID) {
	g.mu.Lock()
	delete(g.own, idKey(id))
	g.mu.Unlock()
}

// askUpstream sends an own request to the upstream and waits for its
// answer at most d.
func (g *Gateway) askUpstream(ctx context.Context, method string, params any, d time.Duration) (json.RawMessage, error) {
	req, ch, err := g.ownRequest(method, params)
	if err != nil {
		return nil, err
	}
	defer g.forget(req.ID)
	conn, err := g.up.conn(ctx, method)
	if err != nil {
		return nil, err
	}
	if err := conn.Write(ctx, req); err != nil {
		g.up.lost(conn, err)
		return nil, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-t.C:
		return nil, fmt.Errorf("gateway: the upstream did not answer %s within %s", method, d)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// errorAnswer is a JSON-RPC error response of the gateway's own, with the
// gateway's code in data.
func errorAnswer(id jsonrpc.ID, code int64, message, csCode string) *jsonrpc.Response {
	data, _ := json.Marshal(map[string]string{MetaCode: csCode})
	return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: message, Data: data}}
}

// initializeParams is what the gateway reads of the client's initialize.
type initializeParams struct {
	ProtocolVersion string `json:"protocolVersion"`
	Capabilities    struct {
		Elicitation *struct {
			URL *json.RawMessage `json:"url"`
		} `json:"elicitation"`
		Tasks *json.RawMessage `json:"tasks"`
	} `json:"capabilities"`
	ClientInfo struct {
		Name string `json:"name"`
	} `json:"clientInfo"`
}

// initializeResult is what the gateway reads of the upstream's answer.
type initializeResult struct {
	ServerInfo serverInfo `json:"serverInfo"`
	Meta       struct {
		ServerInfo serverInfo `json:"io.modelcontextprotocol/serverInfo"`
	} `json:"_meta"`
}

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}
