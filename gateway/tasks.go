package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Pending as an MCP task (MCP 2025-11-25, Tasks). When the client declares
// the tasks capability and the upstream server has no tasks of its own,
// the gateway offers task-augmented tools/call itself: such a call is
// answered at once with a task, the task follows the Countersign item
// (working, or input_required while a URL elicitation points the user to
// the request page), and approval forwards the call to the server, whose
// answer becomes the task's result. Rejection, expiry and every failure
// end the task failed, with the same isError result and code a held call
// gets. The task lives in the TaskStore, so a new gateway process that is
// asked about it picks it up. A client without tasks keeps the
// hold-and-retry of call.go.

// Task methods (the client's requests to the gateway).
const (
	methodTasksGet      = "tasks/get"
	methodTasksResult   = "tasks/result"
	methodTasksList     = "tasks/list"
	methodTasksCancel   = "tasks/cancel"
	methodTasksStatus   = "notifications/tasks/status"
	metaRelatedTask     = "io.modelcontextprotocol/related-task"
	taskCheckTimeout    = 30 * time.Second
	taskRetryAfter      = 2 * time.Second
	taskResultPollEvery = 250 * time.Millisecond
)

// errUpstreamLost is the answer a task's call gets when the upstream
// stopped (or the gateway did) before it answered.
var errUpstreamLost = &jsonrpc.Error{Code: codeInternal, Message: "the upstream server stopped"}

// taskParams is what the gateway reads of a task-augmented tools/call.
type taskParams struct {
	callParams
	Task *struct {
		TTL *int64 `json:"ttl"`
	} `json:"task"`
}

// taskAugmented: the request asks for a task (params.task is an object).
func taskAugmented(params json.RawMessage) bool {
	var p struct {
		Task json.RawMessage `json:"task"`
	}
	return json.Unmarshal(params, &p) == nil && len(p.Task) > 0 && p.Task[0] == '{'
}

// offersTasks: this gateway answers tasks itself for this client.
func (g *Gateway) offersTasks() bool { return g.tasksOffered.Load() }

// taskRequest answers the client's tasks/* requests.
func (g *Gateway) taskRequest(ctx context.Context, m *jsonrpc.Request) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(m.Params, &p)
	if m.Method == methodTasksList {
		var tasks []json.RawMessage
		for _, r := range g.opt.Tasks.list() {
			if g.ownsTask(r) && !g.opt.Tasks.expired(r) {
				tasks = append(tasks, taskJSON(r))
			}
		}
		if tasks == nil {
			tasks = []json.RawMessage{}
		}
		g.toClient(ctx, jsonAnswer(m.ID, map[string]any{"tasks": tasks}))
		return
	}
	r, err := g.loadTask(p.TaskID)
	if err != nil {
		g.toClient(ctx, g.taskResultOrError(m.ID, p.TaskID, nil, err))
		return
	}
	switch m.Method {
	case methodTasksGet:
		g.pickUp(ctx, r)
		g.toClient(ctx, &jsonrpc.Response{ID: m.ID, Result: taskJSON(r)})
	case methodTasksResult:
		g.pickUp(ctx, r)
		g.awaitTaskResult(ctx, m, r.TaskID)
	case methodTasksCancel:
		g.cancelTask(ctx, m, r)
	}
}

// loadTask is the task by id when it is this connector's and user's.
func (g *Gateway) loadTask(id string) (*taskRecord, error) {
	r, err := g.opt.Tasks.load(id)
	if err != nil {
		return nil, err
	}
	if !g.ownsTask(r) || g.opt.Tasks.expired(r) {
		return nil, errTaskNotFound
	}
	return r, nil
}

// ownsTask: the task was made for this connector and user, with this API
// key. A task of another connector would be run against the wrong server;
// one of another key is about another key's item, which this process could
// only end as failed.
func (g *Gateway) ownsTask(r *taskRecord) bool {
	return r.Connector == g.opt.Connector && r.User == g.opt.User && r.Key == keyMark(g.opt.Client.APIKey)
}

// startTask answers a task-augmented tools/call with a task and follows it.
func (g *Gateway) startTask(ctx context.Context, m *jsonrpc.Request) {
	var p taskParams
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Name == "" {
		g.toClient(ctx, errorAnswer(m.ID, codeInvalidParams, "Invalid params: tools/call needs a tool name.", "invalid_params"))
		return
	}
	go g.createTask(ctx, m, p)
}

func (g *Gateway) createTask(ctx context.Context, m *jsonrpc.Request, p taskParams) {
	args, refusal := g.precheck(ctx, m, p.callParams)
	if refusal != nil && refusal.Error != nil {
		g.toClient(ctx, refusal) // a JSON-RPC error is the answer, task or not
		return
	}
	id, err := newTaskID()
	params, perr := forwardParams(m.Params)
	if err != nil || perr != nil {
		g.toClient(ctx, errorAnswer(m.ID, codeInternal, "Internal error", client.CodePolicyUnavailable))
		return
	}
	ttl := defaultTaskTTL
	if p.Task != nil && p.Task.TTL != nil && *p.Task.TTL > 0 {
		ttl = min(max(time.Duration(*p.Task.TTL)*time.Millisecond, minTaskTTL), maxTaskTTL)
	}
	now := time.Now().UTC()
	r := &taskRecord{TaskID: id, Connector: g.opt.Connector, User: g.opt.User, Key: keyMark(g.opt.Client.APIKey), Status: taskWorking,
		StatusMessage: "Asking Countersign whether this call may run.", CreatedAt: now, LastUpdatedAt: now,
		TTL: ttl.Milliseconds(), Params: params}
	if refusal != nil {
		r.Status, r.Result = taskFailed, refusal.Result
		r.StatusMessage = resultText(refusal.Result)
	} else {
		r.Call = g.clientCall(p.callParams, args)
		r.Digest = approval.Digest(r.Call.Arguments)
	}
	if err := g.opt.Tasks.save(r); err != nil {
		g.opt.Log.Error("could not store the task; the call does not run", "tool", p.Name, "err", err)
		g.toClient(ctx, errorAnswer(m.ID, codeInternal, "countersign mcp could not store the task for this call, so it did not run. Tell the user; the gateway's task directory needs attention.", client.CodePolicyUnavailable))
		return
	}
	g.opt.Log.Info("task created for a tool call", "tool", p.Name, "task", id)
	g.toClient(ctx, jsonAnswer(m.ID, map[string]json.RawMessage{"task": taskJSON(r)}))
	g.pickUp(ctx, r)
}

// pickUp follows the task in this process unless it ended or this
// process follows it already: a task created by a gateway process that
// stopped is picked up when the client asks about it.
func (g *Gateway) pickUp(ctx context.Context, r *taskRecord) {
	if taskTerminal(r.Status) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.driving[r.TaskID]; ok {
		return
	}
	dctx, cancel := context.WithCancel(ctx)
	g.driving[r.TaskID] = cancel
	go func() {
		defer func() {
			cancel()
			g.mu.Lock()
			delete(g.driving, r.TaskID)
			g.mu.Unlock()
		}()
		g.driveTask(dctx, r.TaskID)
	}()
}

// driveTask checks the call (when not yet checked), waits for the person,
// and runs the call once approved. It returns early, the task unchanged,
// when ctx ends: a later process picks it up.
func (g *Gateway) driveTask(ctx context.Context, id string) {
	r, err := g.opt.Tasks.load(id)
	if err != nil || taskTerminal(r.Status) {
		return
	}
	if r.Pending == nil {
		cctx, stop := context.WithTimeout(ctx, taskCheckTimeout)
		out, p, err := g.opt.Client.Check(cctx, r.Call)
		stop()
		if ctx.Err() != nil {
			return
		}
		if p == nil {
			if out.Allowed {
				g.runTask(ctx, r, nil)
			} else {
				g.endTask(r, g.checkFailed(r.Call.Tool, r.Call, out, err))
			}
			return
		}
		r.Pending = p
		g.setTask(r, taskWorking, waitingMessage(p.URL))
	}
	if r.Pending.URL != "" && g.offersURLElicitation() {
		go g.elicitTaskLink(ctx, id, r.Pending.URL, r.Pending.ApprovalID)
	}
	for {
		approved, out, err := g.opt.Client.Await(ctx, r.Call, *r.Pending, 0)
		if ctx.Err() != nil {
			return
		}
		if approved {
			g.runTask(ctx, r, r.Pending)
			return
		}
		if err != nil && unreachable(err) && time.Now().Before(r.Pending.GiveUp) {
			// Countersign out of reach for a moment: the item is still
			// there, the task goes on waiting on it.
			select {
			case <-ctx.Done():
				return
			case <-time.After(taskRetryAfter):
			}
			continue
		}
		if g.opt.Tasks.running(id) {
			// Another process claimed the item (it reads as consumed
			// here) or the client cancelled the task: that one ends it.
			g.awaitRunner(ctx, id)
			return
		}
		g.endTask(r, g.checkFailed(r.Call.Tool, r.Call, out, err))
		return
	}
}

func waitingMessage(url string) string {
	if url == "" {
		return "Waiting for approval in Countersign."
	}
	return "Waiting for approval in Countersign at " + url
}

// runTask claims the approval p (nil: allowed without a person) and
// forwards the call to the server, once: the process that takes the
// task's run marker does; any other waits for its result.
func (g *Gateway) runTask(ctx context.Context, r *taskRecord, p *client.Pending) {
	mine, err := g.opt.Tasks.claimRun(r.TaskID)
	if err != nil {
		g.opt.Log.Error("could not claim the task; the call does not run", "task", r.TaskID, "err", err)
		g.endTask(r, client.Outcome{Code: client.CodePolicyUnavailable, Message: approval.Message(approval.CodePolicyUnavailable, approval.MessageInput{Tool: r.Call.Tool})})
		return
	}
	if !mine {
		g.awaitRunner(ctx, r.TaskID)
		return
	}
	// The call is read back out of the task as stored now and of the very
	// params sent to the server: the claim binds the digest of these
	// arguments; a task file that cannot be read, or that names a tool or
	// arguments other than Countersign was asked about (changed while the
	// item waited), runs nothing.
	cur, err := g.opt.Tasks.load(r.TaskID)
	var params json.RawMessage
	var call client.Call
	if err == nil {
		params, call, err = forwardedCall(cur)
	}
	if err != nil {
		g.opt.Log.Error("the task's call is not the one Countersign was asked about; it does not run", "task", r.TaskID, "err", err)
		g.endTask(r, client.Outcome{Code: client.CodePolicyUnavailable, Message: approval.Message(approval.CodePolicyUnavailable, approval.MessageInput{Tool: r.Call.Tool})})
		return
	}
	if p != nil {
		out, err := g.opt.Client.Claim(context.WithoutCancel(ctx), call, *p)
		if !out.Allowed {
			g.endTask(r, g.checkFailed(call.Tool, call, out, err))
			return
		}
	}
	g.setTask(r, taskWorking, "Approved; the call is running.")
	resp := g.forwardTask(ctx, params)
	r.Status, r.StatusMessage = taskCompleted, ""
	switch {
	case resp.Error == errUpstreamLost:
		out := client.Outcome{Code: CodeUpstreamUnavailable,
			Message: "The tool's server stopped while running this call, so it may or may not have taken effect. Tell the user; the server is started again on the next call."}
		r.Result, _ = json.Marshal(refused(out))
		r.Status, r.StatusMessage = taskFailed, out.Message
	case resp.Error != nil:
		var we *jsonrpc.Error
		if !errors.As(resp.Error, &we) {
			we = &jsonrpc.Error{Code: codeInternal, Message: resp.Error.Error()}
		}
		r.Error, _ = json.Marshal(we)
		r.Status, r.StatusMessage = taskFailed, we.Message
	default:
		r.Result = resp.Result
		var res struct {
			IsError bool `json:"isError"`
		}
		if json.Unmarshal(resp.Result, &res) == nil && res.IsError {
			// MCP: a tool result with isError ends its task failed.
			r.Status, r.StatusMessage = taskFailed, "The tool answered with an error; tasks/result has its answer."
		}
	}
	g.saveTask(r)
}

// forwardedCall is the params the server gets for the task's call, each
// member once, and the call as read back out of exactly those bytes: the
// stored call with the tool and arguments they hold, which must be the
// ones Countersign was asked about (and their digest the one stored).
func forwardedCall(r *taskRecord) (json.RawMessage, client.Call, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(r.Params, &p); err != nil || p == nil {
		return nil, client.Call{}, errors.New("gateway: the task's params are not a JSON object")
	}
	params, err := marshalExact(p)
	if err != nil {
		return nil, client.Call{}, err
	}
	var sent callParams
	if err := json.Unmarshal(params, &sent); err != nil {
		return nil, client.Call{}, err
	}
	args, ok := arguments(sent.Arguments)
	call := r.Call
	call.Tool, call.Arguments = sent.Name, string(args)
	switch {
	case !ok:
		return nil, client.Call{}, errors.New("gateway: the task's arguments are not a JSON object")
	case call.Tool != r.Call.Tool:
		return nil, client.Call{}, fmt.Errorf("gateway: the task's params name the tool %q, not %q", call.Tool, r.Call.Tool)
	case call.Arguments != r.Call.Arguments || approval.Digest(call.Arguments) != r.Digest:
		return nil, client.Call{}, errors.New("gateway: the task's params hold other arguments than were checked")
	}
	return params, call, nil
}

// awaitRunner waits for the process that runs the task to end it; when
// that process is gone first, the call may or may not have run.
func (g *Gateway) awaitRunner(ctx context.Context, id string) {
	for {
		r, err := g.opt.Tasks.load(id)
		if err != nil || taskTerminal(r.Status) {
			return
		}
		if g.opt.Tasks.runnerGone(id) {
			g.endTask(r, client.Outcome{Code: CodeUpstreamUnavailable,
				Message: "The gateway process that was running this call stopped before it answered, so the call may or may not have taken effect. Tell the user."})
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(taskResultPollEvery):
		}
	}
}

// forwardTask sends the approved call to the upstream as a request of the
// gateway's own and returns its answer (errUpstreamLost when none came).
func (g *Gateway) forwardTask(ctx context.Context, params json.RawMessage) *jsonrpc.Response {
	req, ch, err := g.ownRequest(methodCallTool, nil)
	if err != nil {
		return &jsonrpc.Response{Error: errUpstreamLost}
	}
	defer g.forget(req.ID)
	if ctx.Err() != nil {
		// The gateway is stopping: the call is not sent.
		return &jsonrpc.Response{Error: &jsonrpc.Error{Code: codeInternal, Message: "countersign mcp stopped before it could send this call to the tool's server, so it did not run."}}
	}
	req.Params = params
	rid, err := json.Marshal(req.ID.Raw())
	if err != nil {
		return &jsonrpc.Response{Error: &jsonrpc.Error{Code: codeInternal, Message: "countersign mcp could not write this call for the tool's server, so it did not run."}}
	}
	// Written as these bytes, params exactly as claimed (see forwardedCall):
	// the arguments reach the server as the client sent them, not escaped
	// again.
	req.Extra = rawFrame(slices.Concat([]byte(`{"jsonrpc":"2.0","id":`), rid, []byte(`,"method":"`+methodCallTool+`","params":`), params, []byte(`}`)))
	conn, err := g.up.conn(ctx, methodCallTool)
	if err != nil {
		g.opt.Log.Error("upstream server unavailable", "err", err)
		return &jsonrpc.Response{Error: &jsonrpc.Error{Code: codeInternal, Message: "The tool's server could not be started, so this call did not run."}}
	}
	g.mu.Lock()
	g.fwd[idKey(req.ID)] = forwarded{id: req.ID, method: methodCallTool, own: ch}
	g.mu.Unlock()
	if err := conn.Write(ctx, req); err != nil {
		g.up.lost(conn, err)
	}
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return &jsonrpc.Response{Error: errUpstreamLost}
	}
}

// endTask ends the task failed with out (a call that did not run).
func (g *Gateway) endTask(r *taskRecord, out client.Outcome) {
	r.Result, _ = json.Marshal(refused(out))
	r.Status, r.StatusMessage = taskFailed, out.Message
	g.saveTask(r)
	g.opt.Log.Info("task ended; the call did not run", "task", r.TaskID, "tool", r.Call.Tool, "code", out.Code)
}

// setTask changes the task's status and tells the client.
func (g *Gateway) setTask(r *taskRecord, status, message string) {
	r.Status, r.StatusMessage = status, message
	g.saveTask(r)
}

func (g *Gateway) saveTask(r *taskRecord) {
	r.LastUpdatedAt = time.Now().UTC()
	if err := g.opt.Tasks.save(r); err != nil {
		g.opt.Log.Error("could not store the task", "task", r.TaskID, "err", err)
		if !taskTerminal(r.Status) {
			return
		}
		// The end is kept in memory (see TaskStore.load): the client is
		// told, by this process.
	}
	if g.client != nil {
		g.toClient(context.Background(), &jsonrpc.Request{Method: methodTasksStatus, Params: taskJSON(r)})
	}
}

// elicitTaskLink offers the request page by URL elicitation, related to
// the task; the task is input_required until the client answered it.
func (g *Gateway) elicitTaskLink(ctx context.Context, id, url, approvalID string) {
	req, ch, err := g.ownRequest(methodElicit, map[string]any{"mode": "url", "url": url, "elicitationId": approvalID,
		"message": "This tool call needs your approval in Countersign.",
		"_meta":   map[string]any{metaRelatedTask: map[string]string{"taskId": id}}})
	if err != nil {
		return
	}
	defer g.forget(req.ID)
	g.setStored(id, taskInputRequired, "The user must approve this call in Countersign at "+url)
	g.toClient(ctx, req)
	select {
	case <-ch:
		g.setStored(id, taskWorking, waitingMessage(url))
	case <-ctx.Done():
		params, _ := json.Marshal(map[string]any{"requestId": req.ID.Raw(), "reason": "The call is no longer waiting for approval."})
		g.toClient(context.WithoutCancel(ctx), &jsonrpc.Request{Method: methodCancelled, Params: params})
	}
}

// setStored changes the status of the task as stored, unless it ended.
func (g *Gateway) setStored(id, status, message string) {
	r, err := g.opt.Tasks.load(id)
	if err != nil || taskTerminal(r.Status) || r.Status == status && r.StatusMessage == message {
		return
	}
	g.setTask(r, status, message)
}

// awaitTaskResult answers tasks/result once the task ended (MCP: the
// answer waits until then). The client may cancel the request.
func (g *Gateway) awaitTaskResult(ctx context.Context, m *jsonrpc.Request, id string) {
	hctx, cancel := context.WithCancel(ctx)
	h := &heldCall{cancel: cancel}
	key := idKey(m.ID)
	g.mu.Lock()
	g.held[key] = h
	g.mu.Unlock()
	go func() {
		defer cancel()
		for {
			r, err := g.opt.Tasks.load(id)
			if err != nil || taskTerminal(r.Status) {
				g.mu.Lock()
				answer := !h.cancelled
				delete(g.held, key)
				g.mu.Unlock()
				if answer {
					g.toClient(ctx, g.taskResultOrError(m.ID, id, r, err))
				}
				return
			}
			select {
			case <-hctx.Done():
				g.mu.Lock()
				delete(g.held, key)
				g.mu.Unlock()
				return
			case <-time.After(taskResultPollEvery):
			}
		}
	}()
}

// taskResultOrError is the ended task's answer, or, when the task can no
// longer be read (removed, truncated, corrupt), an error saying so: the
// gateway does not know the call's outcome, and will not run it (runTask
// reads the task again first).
func (g *Gateway) taskResultOrError(rid jsonrpc.ID, id string, r *taskRecord, err error) *jsonrpc.Response {
	switch {
	case err == nil:
		return taskResultAnswer(rid, r)
	case errors.Is(err, errTaskNotFound):
		return errorAnswer(rid, codeInvalidParams, "Failed to retrieve task: Task not found", "task_not_found")
	}
	g.opt.Log.Error("could not read the task", "task", id, "err", err)
	return errorAnswer(rid, codeInternal, "countersign mcp could not read this task's file, so the call is not run by this task. "+
		"Tell the user; the gateway's task directory needs attention.", client.CodePolicyUnavailable)
}

// taskResultAnswer is the ended task's answer, as the call's would have
// been, with the task named in _meta.
func taskResultAnswer(id jsonrpc.ID, r *taskRecord) *jsonrpc.Response {
	if r.Status == taskCancelled && len(r.Result) == 0 {
		return errorAnswer(id, codeInvalidParams, "The task was cancelled; the call did not run.", "task_cancelled")
	}
	if len(r.Error) > 0 {
		var e jsonrpc.Error
		if json.Unmarshal(r.Error, &e) == nil {
			return &jsonrpc.Response{ID: id, Error: &e}
		}
	}
	res, err := withMember(r.Result, "_meta", func(meta map[string]json.RawMessage) {
		meta[metaRelatedTask], _ = json.Marshal(map[string]string{"taskId": r.TaskID})
	})
	if err != nil {
		return &jsonrpc.Response{ID: id, Result: r.Result}
	}
	return &jsonrpc.Response{ID: id, Result: res}
}

// cancelTask follows tasks/cancel: a task whose call is not running yet
// is cancelled with its Countersign item; an ended task cannot be.
func (g *Gateway) cancelTask(ctx context.Context, m *jsonrpc.Request, r *taskRecord) {
	if taskTerminal(r.Status) {
		g.toClient(ctx, errorAnswer(m.ID, codeInvalidParams, "Cannot cancel task in terminal status: "+r.Status, "task_ended"))
		return
	}
	mine, err := g.opt.Tasks.claimRun(r.TaskID)
	if err != nil || !mine {
		g.toClient(ctx, errorAnswer(m.ID, codeInvalidParams, "The call of this task is already running at the server; it cannot be cancelled.", "task_running"))
		return
	}
	g.mu.Lock()
	stop := g.driving[r.TaskID]
	g.mu.Unlock()
	if stop != nil {
		stop()
	}
	if r.Call.CallID != "" {
		g.cancelItem(ctx, r.Call)
	}
	r.Status, r.StatusMessage = taskCancelled, "Cancelled by the client; the call did not run."
	g.saveTask(r)
	g.toClient(ctx, &jsonrpc.Response{ID: m.ID, Result: taskJSON(r)})
}

// taskJSON is the task as MCP shows it.
func taskJSON(r *taskRecord) json.RawMessage {
	t := map[string]any{"taskId": r.TaskID, "status": r.Status, "ttl": r.TTL,
		"createdAt":     r.CreatedAt.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt": r.LastUpdatedAt.UTC().Format(time.RFC3339Nano),
		"pollInterval":  taskPollEvery.Milliseconds()}
	if r.StatusMessage != "" {
		t["statusMessage"] = r.StatusMessage
	}
	b, _ := marshalExact(t)
	return b
}

func jsonAnswer(id jsonrpc.ID, v any) *jsonrpc.Response {
	b, err := marshalExact(v)
	if err != nil {
		return errorAnswer(id, codeInternal, "Internal error", client.CodePolicyUnavailable)
	}
	return &jsonrpc.Response{ID: id, Result: b}
}

// resultText is the text of a CallToolResult's text content.
func resultText(result json.RawMessage) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(result, &r)
	var b bytes.Buffer
	for _, c := range r.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// forwardParams are the params of the client's task-augmented tools/call
// as the server gets them once approved: without the task (the server
// runs the call as an ordinary one) and without the progress token (the
// request it belonged to was answered with the task). The arguments keep
// their bytes, insignificant whitespace aside.
func forwardParams(params json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	delete(p, "task")
	if raw, ok := p["_meta"]; ok {
		var meta map[string]json.RawMessage
		if json.Unmarshal(raw, &meta) == nil {
			delete(meta, "progressToken")
			if len(meta) == 0 {
				delete(p, "_meta")
			} else {
				p["_meta"], _ = marshalExact(meta)
			}
		}
	}
	return marshalExact(p)
}

// marshalExact is json.Marshal without HTML escaping, so that strings keep
// their characters as sent.
func marshalExact(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// withMember re-encodes the JSON object obj with its member name (an
// object, created when missing) changed by edit.
func withMember(obj json.RawMessage, name string, edit func(map[string]json.RawMessage)) (json.RawMessage, error) {
	var o map[string]json.RawMessage
	if err := json.Unmarshal(obj, &o); err != nil || o == nil {
		return nil, errors.New("gateway: not a JSON object")
	}
	inner := map[string]json.RawMessage{}
	if raw, ok := o[name]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &inner); err != nil || inner == nil {
			return nil, errors.New("gateway: member is not an object")
		}
	}
	edit(inner)
	var err error
	if o[name], err = marshalExact(inner); err != nil {
		return nil, err
	}
	return marshalExact(o)
}
