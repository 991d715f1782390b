package gateway

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// gatewayTasksCapability is the tasks capability the gateway declares for
// the server when it serves tasks itself: tools/call, tasks/list and
// tasks/cancel.
var gatewayTasksCapability = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// offerTasks is the upstream's initialize answer as the client gets it:
// with the tasks capability added when the gateway serves tasks for this
// client — it declared tasks, a task store is configured, and the server
// declares no tasks of its own (whose tasks/* then pass through
// unchanged). Only then is the answer re-encoded (its members in another
// order, each value as it was).
func (g *Gateway) offerTasks(m *jsonrpc.Response) *jsonrpc.Response {
	g.mu.Lock()
	wants := g.clientIni.Capabilities.Tasks != nil
	g.mu.Unlock()
	offer := false
	defer func() { g.tasksOffered.Store(offer) }()
	if !wants || g.opt.Tasks == nil {
		return m
	}
	var r struct {
		Capabilities struct {
			Tasks json.RawMessage `json:"tasks"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(m.Result, &r) != nil || len(r.Capabilities.Tasks) > 0 && string(r.Capabilities.Tasks) != "null" {
		return m
	}
	res, err := withMember(m.Result, "capabilities", func(c map[string]json.RawMessage) {
		c["tasks"] = gatewayTasksCapability
	})
	if err != nil {
		return m
	}
	offer = true
	return &jsonrpc.Response{ID: m.ID, Result: res}
}

// withTaskSupport is a tools/list answer with each tool marked as
// callable as a task (execution.taskSupport "optional"), as MCP asks
// before a client may task-augment a call. The server has no tasks (or
// the gateway would not offer its own), so its "forbidden" — what the
// SDKs write for every tool of a server without tasks — says only that
// the server cannot keep a task; the gateway keeps it, and the server gets
// an ordinary call. Only then is the answer re-encoded; a tool marked
// "required" is left as it is.
func withTaskSupport(m *jsonrpc.Response) *jsonrpc.Response {
	var r map[string]json.RawMessage
	if json.Unmarshal(m.Result, &r) != nil {
		return m
	}
	var tools []json.RawMessage
	if json.Unmarshal(r["tools"], &tools) != nil {
		return m
	}
	for i, t := range tools {
		var has struct {
			Execution *struct {
				TaskSupport *string `json:"taskSupport"`
			} `json:"execution"`
		}
		if json.Unmarshal(t, &has) != nil || has.Execution != nil && has.Execution.TaskSupport != nil && *has.Execution.TaskSupport == "required" {
			continue
		}
		if nt, err := withMember(t, "execution", func(e map[string]json.RawMessage) {
			e["taskSupport"] = json.RawMessage(`"optional"`)
		}); err == nil {
			tools[i] = nt
		}
	}
	b, err := marshalExact(tools)
	if err != nil {
		return m
	}
	r["tools"] = b
	res, err := marshalExact(r)
	if err != nil {
		return m
	}
	return &jsonrpc.Response{ID: m.ID, Result: res}
}
