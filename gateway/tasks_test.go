package gateway_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/gateway"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// initTasks is a client's initialize that declares tasks.
const initTasks = `{"protocolVersion":"2025-11-25","capabilities":{"tasks":{"list":{},"cancel":{}}},"clientInfo":{"name":"tasks-client","version":"1"}}`

func (c *rawClient) initializeTasks() *jsonrpc.Response {
	c.t.Helper()
	c.send(0, "initialize", initTasks)
	r := c.response(0, 10*time.Second)
	c.send(nil, "notifications/initialized", `{}`)
	return r
}

type taskAnswer struct {
	Task          *taskAnswer `json:"task"`
	TaskID        string      `json:"taskId"`
	Status        string      `json:"status"`
	StatusMessage string      `json:"statusMessage"`
	Content       []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError bool           `json:"isError"`
	Meta    map[string]any `json:"_meta"`
}

func decodeTask(t *testing.T, r *jsonrpc.Response) taskAnswer {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("error answer: %v", r.Error)
	}
	var a taskAnswer
	if err := json.Unmarshal(r.Result, &a); err != nil {
		t.Fatalf("%s: %v", r.Result, err)
	}
	return a
}

// taskGateway is a gateway process with its own handle on the task
// directory dir.
func taskGateway(t *testing.T, h *harness, n *notes, dir string, key string) *rawClient {
	t.Helper()
	store, err := gateway.OpenTaskStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	opt := rawOptions(h.e, n.inMemory())
	opt.Tasks = store
	opt.Client = client.New(h.e.BaseURL, key) // every process of a runtime has its key
	c := serveRaw(t, opt)
	if r := c.initializeTasks(); !strings.Contains(string(r.Result), `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		t.Fatalf("initialize does not offer tasks: %s", r.Result)
	}
	return c
}

// waitStatus asks tasks/get until the task's status message has part.
func waitStatus(t *testing.T, c *rawClient, id any, taskID, part string) taskAnswer {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c.send(id, "tasks/get", `{"taskId":"`+taskID+`"}`)
		a := decodeTask(t, c.response(id, 5*time.Second))
		if strings.Contains(a.Status+" "+a.StatusMessage, part) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: %+v, want %q", taskID, a, part)
		}
	}
}

// A task outlives the gateway process that made it: a new process picks
// it up, and of two processes asked for its result at once, the call runs
// once and both answer with its result.
func TestTaskPickedUpByNewGatewayProcess(t *testing.T) {
	e, b := countersign(t)
	h := &harness{e: e, member: b}
	n := &notes{}
	key := e.APIKey()
	dir := filepath.Join(t.TempDir(), "tasks")
	first := taskGateway(t, h, n, dir, key)
	h.waitCount(t, 4, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	first.send(1, "tools/list", `{}`)
	if r := first.response(1, 10*time.Second); !strings.Contains(string(r.Result), `"execution":{"taskSupport":"optional"}`) {
		t.Fatalf("tools/list does not offer tasks: %s", r.Result)
	}
	first.send(2, "tools/call", `{"name":"write_note","arguments":{"text":"kept  as  written"},"task":{"ttl":60000},"_meta":{"progressToken":"p1"}}`)
	created := decodeTask(t, first.response(2, 10*time.Second))
	if created.Task == nil || created.Task.TaskID == "" || created.Task.Status != "working" {
		t.Fatalf("tools/call answered %+v", created)
	}
	taskID := created.Task.TaskID
	id := h.pending(t, "write_note")
	waitStatus(t, first, 3, taskID, "/approvals/"+id)
	_ = first.conn.Close() // the first process ends with the client
	h.decide(t, id, url.Values{"decision": {"approve"}})
	time.Sleep(300 * time.Millisecond)
	if got := n.got("write_note"); len(got) != 0 {
		t.Fatalf("ran with no gateway process asked: %q", got)
	}

	second, third := taskGateway(t, h, n, dir, key), taskGateway(t, h, n, dir, key)
	second.send(4, "tasks/result", `{"taskId":"`+taskID+`"}`)
	third.send(4, "tasks/result", `{"taskId":"`+taskID+`"}`)
	for _, c := range []*rawClient{second, third} {
		a := decodeTask(t, c.response(4, 20*time.Second))
		if a.IsError || len(a.Content) != 1 || a.Content[0].Text != "written" {
			t.Fatalf("tasks/result %+v", a)
		}
		if rel, _ := a.Meta["io.modelcontextprotocol/related-task"].(map[string]any); rel["taskId"] != taskID {
			t.Fatalf("tasks/result _meta %v", a.Meta)
		}
	}
	if got := n.got("write_note"); len(got) != 1 || got[0] != `{"text":"kept  as  written"}` {
		t.Fatalf("the upstream got %q", got)
	}
	if a := waitStatus(t, third, 5, taskID, "completed"); a.TaskID != taskID {
		t.Fatalf("tasks/get %+v", a)
	}
	if k := h.count(t, `SELECT count(*) FROM approvals WHERE tool = 'write_note' AND status = 'consumed'`); k != 1 {
		t.Fatalf("%d consumed items", k)
	}
	// Another connector's gateway does not see the task.
	store, _ := gateway.OpenTaskStore(dir)
	opt := rawOptions(e, n.inMemory())
	opt.Connector, opt.Tasks = "other-notes", store
	other := serveRaw(t, opt)
	other.initializeTasks()
	other.send(6, "tasks/get", `{"taskId":"`+taskID+`"}`)
	if r := other.response(6, 5*time.Second); r.Error == nil {
		t.Fatalf("another connector got the task: %s", r.Result)
	}
}

// tasks/cancel ends a waiting task and its item; the call never runs, and
// an ended task cannot be cancelled.
func TestTaskCancelled(t *testing.T) {
	e, b := countersign(t)
	h := &harness{e: e, member: b}
	n := &notes{}
	key := e.APIKey()
	c := taskGateway(t, h, n, filepath.Join(t.TempDir(), "tasks"), key)
	h.waitCount(t, 4, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	c.send(1, "tools/call", `{"name":"write_note","arguments":{"text":"never"},"task":{}}`)
	taskID := decodeTask(t, c.response(1, 10*time.Second)).Task.TaskID
	id := h.pending(t, "write_note")
	waitStatus(t, c, 2, taskID, "/approvals/"+id)
	c.send(3, "tasks/cancel", `{"taskId":"`+taskID+`"}`)
	if a := decodeTask(t, c.response(3, 10*time.Second)); a.Status != "cancelled" {
		t.Fatalf("tasks/cancel %+v", a)
	}
	h.waitCount(t, 1, `SELECT count(*) FROM approvals WHERE id = $1 AND status = 'cancelled'`, id)
	c.send(4, "tasks/cancel", `{"taskId":"`+taskID+`"}`)
	if r := c.response(4, 5*time.Second); r.Error == nil {
		t.Fatalf("an ended task was cancelled again: %s", r.Result)
	}
	if got := n.got("write_note"); len(got) != 0 {
		t.Fatalf("the cancelled call ran: %q", got)
	}
}

// A task-augmented call the policy allows runs at once; one that is
// refused before any check ends its task failed with the gateway's code.
func TestTaskAllowedAndRefusedAtOnce(t *testing.T) {
	e, b := countersign(t)
	h := &harness{e: e, member: b}
	n := &notes{}
	key := e.APIKey()
	c := taskGateway(t, h, n, filepath.Join(t.TempDir(), "tasks"), key)
	h.waitCount(t, 4, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	c.send(1, "tools/call", `{"name":"read_note","arguments":{},"task":{}}`)
	read := decodeTask(t, c.response(1, 10*time.Second)).Task.TaskID
	c.send(2, "tools/call", `{"name":"write_note","arguments":[1],"task":{}}`)
	bad := decodeTask(t, c.response(2, 10*time.Second)).Task.TaskID
	c.send(3, "tasks/result", `{"taskId":"`+read+`"}`)
	if a := decodeTask(t, c.response(3, 10*time.Second)); a.IsError || a.Content[0].Text != "the note" {
		t.Fatalf("allowed %+v", a)
	}
	c.send(4, "tasks/result", `{"taskId":"`+bad+`"}`)
	if a := decodeTask(t, c.response(4, 10*time.Second)); !a.IsError || a.Meta[gateway.MetaCode] != "policy_unavailable" {
		t.Fatalf("refused %+v", a)
	}
	c.send(5, "tools/call", `{"name":"no_such_tool","arguments":{},"task":{}}`)
	if r := c.response(5, 10*time.Second); r.Error == nil {
		t.Fatalf("unknown tool: %s", r.Result)
	}
	if got := n.got("write_note"); len(got) != 0 {
		t.Fatalf("the refused call ran: %q", got)
	}
}

// A client that declares tasks in front of a server with tasks of its
// own: the gateway offers none of its own, and the relay is unchanged.
func TestServerTasksPassThrough(t *testing.T) {
	e, _ := countersign(t)
	store, err := gateway.OpenTaskStore(filepath.Join(t.TempDir(), "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	opt := rawOptions(e, rawUpstream(t, make(chan json.RawMessage, 1)))
	opt.Tasks = store
	c := serveRaw(t, opt)
	if r := c.initializeTasks(); string(r.Result) != scripted["initialize"] {
		t.Fatalf("initialize changed:\n%s", r.Result)
	}
	c.send(1, "tools/list", `{}`)
	if r := c.response(1, 10*time.Second); string(r.Result) != scripted["tools/list"] {
		t.Fatalf("tools/list changed:\n%s", r.Result)
	}
	c.send(2, "tasks/get", `{"taskId":"up-1"}`)
	if r := c.response(2, 10*time.Second); r.Error != nil || string(r.Result) != `{}` {
		t.Fatalf("tasks/get did not reach the server: %v %s", r.Error, r.Result)
	}
}

// The call a task forwards once approved is the call the person approved:
// the claim binds the tool and the digest of the very arguments sent to the
// server, so a task file changed while the item waited (its params, not
// what Countersign was asked) runs nothing.
func TestTaskForwardsOnlyTheApprovedCall(t *testing.T) {
	for _, tc := range []struct{ name, params, tool string }{
		{"OtherArguments", `{"name":"write_note","arguments":{"text":"swapped"}}`, "write_note"},
		{"OtherTool", `{"name":"read_note","arguments":{"text":"approved"}}`, "read_note"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, b := countersign(t)
			h := &harness{e: e, member: b}
			n := &notes{}
			key := e.APIKey()
			dir := filepath.Join(t.TempDir(), "tasks")
			first := taskGateway(t, h, n, dir, key)
			h.waitCount(t, 4, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
			first.send(1, "tools/call", `{"name":"write_note","arguments":{"text":"approved"},"task":{}}`)
			taskID := decodeTask(t, first.response(1, 10*time.Second)).Task.TaskID
			id := h.pending(t, "write_note")
			waitStatus(t, first, 2, taskID, "/approvals/"+id)
			_ = first.conn.Close()

			file := filepath.Join(dir, taskID+".json")
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var rec map[string]json.RawMessage
			if err := json.Unmarshal(raw, &rec); err != nil {
				t.Fatal(err)
			}
			rec["params"] = json.RawMessage(tc.params)
			if raw, err = json.Marshal(rec); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			h.decide(t, id, url.Values{"decision": {"approve"}})

			second := taskGateway(t, h, n, dir, key)
			second.send(3, "tasks/result", `{"taskId":"`+taskID+`"}`)
			if a := decodeTask(t, second.response(3, 20*time.Second)); !a.IsError || a.Meta[gateway.MetaCode] != "policy_unavailable" {
				t.Fatalf("tasks/result of a changed task: %+v", a)
			}
			if got := n.got(tc.tool); len(got) != 0 {
				t.Fatalf("the server got %s %q, not the approved call", tc.tool, got)
			}
			if k := h.count(t, `SELECT count(*) FROM approvals WHERE id = $1 AND status = 'consumed'`, id); k != 0 {
				t.Fatalf("the approval was claimed for a call that differs from the one shown")
			}
		})
	}
}

// A task file that becomes unreadable (truncated, corrupt) while its item
// waits: tasks/result is answered with an error at once instead of waiting
// for ever, and an approval that comes after runs nothing.
func TestTaskFileUnreadable(t *testing.T) {
	e, b := countersign(t)
	h := &harness{e: e, member: b}
	n := &notes{}
	dir := filepath.Join(t.TempDir(), "tasks")
	c := taskGateway(t, h, n, dir, e.APIKey())
	h.waitCount(t, 4, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	c.send(1, "tools/call", `{"name":"write_note","arguments":{"text":"kept"},"task":{}}`)
	taskID := decodeTask(t, c.response(1, 10*time.Second)).Task.TaskID
	id := h.pending(t, "write_note")
	waitStatus(t, c, 2, taskID, "/approvals/"+id)
	c.send(3, "tasks/result", `{"taskId":"`+taskID+`"}`) // held while the item waits
	time.Sleep(300 * time.Millisecond)
	file := filepath.Join(dir, taskID+".json")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, raw[:len(raw)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.response(3, 5*time.Second)
	if r.Error == nil || !strings.Contains(r.Error.Error(), "could not read this task") {
		t.Fatalf("tasks/result of an unreadable task: %v %s", r.Error, r.Result)
	}
	c.send(4, "tasks/get", `{"taskId":"`+taskID+`"}`)
	if r := c.response(4, 5*time.Second); r.Error == nil || !strings.Contains(r.Error.Error(), "could not read this task") {
		t.Fatalf("tasks/get of an unreadable task: %v %s", r.Error, r.Result)
	}
	h.decide(t, id, url.Values{"decision": {"approve"}})
	time.Sleep(500 * time.Millisecond)
	if got := n.got("write_note"); len(got) != 0 {
		t.Fatalf("the call of an unreadable task ran: %q", got)
	}
	if k := h.count(t, `SELECT count(*) FROM approvals WHERE id = $1 AND status = 'consumed'`, id); k != 0 {
		t.Fatalf("the approval of an unreadable task was claimed")
	}
}

// A task's end that cannot be stored (the task directory became unusable
// while the item waited) still reaches the client: tasks/result answers
// with the rejection instead of waiting for ever.
func TestTaskEndNotStored(t *testing.T) {
	e, b := countersign(t)
	h := &harness{e: e, member: b}
	n := &notes{}
	dir := filepath.Join(t.TempDir(), "tasks")
	c := taskGateway(t, h, n, dir, e.APIKey())
	h.waitCount(t, 4, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	c.send(1, "tools/call", `{"name":"write_note","arguments":{"text":"never"},"task":{}}`)
	taskID := decodeTask(t, c.response(1, 10*time.Second)).Task.TaskID
	id := h.pending(t, "write_note")
	waitStatus(t, c, 2, taskID, "/approvals/"+id)
	// A directory others may write is refused for writing: nothing more
	// is stored from here on (chmod alone would not stop a test run as root).
	if err := os.Chmod(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	c.send(3, "tasks/result", `{"taskId":"`+taskID+`"}`)
	h.decide(t, id, url.Values{"decision": {"reject"}, "reason": {"not now"}})
	a := decodeTask(t, c.response(3, 10*time.Second))
	if !a.IsError || a.Meta[gateway.MetaCode] != "approval_denied" || len(a.Content) != 1 || !strings.Contains(a.Content[0].Text, "not now") {
		t.Fatalf("tasks/result of a task whose end was not stored: %+v", a)
	}
	if got := n.got("write_note"); len(got) != 0 {
		t.Fatalf("the rejected call ran: %q", got)
	}
}

// An approved task's arguments reach the server as the client wrote them
// (insignificant whitespace aside): characters JSON may escape — <, >, &,
// U+2028, bidi and zero-width characters — are not escaped again on the
// way through the task file, and the claim binds those very bytes.
func TestTaskForwardsArgumentsAsSent(t *testing.T) {
	e, b := countersign(t)
	h := &harness{e: e, member: b}
	n := &notes{}
	c := taskGateway(t, h, n, filepath.Join(t.TempDir(), "tasks"), e.APIKey())
	h.waitCount(t, 4, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	const args = "{\"text\":\"<b>&amp;</b> \u2028 \u202egnp.exe \u200b é \\u0041\"}"
	c.send(1, "tools/call", `{"name":"write_note","arguments":`+args+`,"task":{}}`)
	taskID := decodeTask(t, c.response(1, 10*time.Second)).Task.TaskID
	id := h.pending(t, "write_note")
	waitStatus(t, c, 2, taskID, "/approvals/"+id)
	h.decide(t, id, url.Values{"decision": {"approve"}})
	c.send(3, "tasks/result", `{"taskId":"`+taskID+`"}`)
	if a := decodeTask(t, c.response(3, 10*time.Second)); a.IsError {
		t.Fatalf("tasks/result %+v", a)
	}
	if got := n.got("write_note"); len(got) != 1 || got[0] != args {
		t.Fatalf("the server got %q, the client sent %q", got, args)
	}
}

// A task belongs to the API key that asked about its call (the item is
// the key's): a gateway process of the same connector and user with
// another key does not see it, and cannot end it; the key's own process
// still runs it once approved.
func TestTaskOfAnotherKey(t *testing.T) {
	e, b := countersign(t)
	h := &harness{e: e, member: b}
	n := &notes{}
	dir := filepath.Join(t.TempDir(), "tasks")
	key := e.APIKey()
	first := taskGateway(t, h, n, dir, key)
	h.waitCount(t, 4, `SELECT count(*) FROM tools WHERE connector = 'notes'`)
	first.send(1, "tools/call", `{"name":"write_note","arguments":{"text":"mine"},"task":{}}`)
	taskID := decodeTask(t, first.response(1, 10*time.Second)).Task.TaskID
	id := h.pending(t, "write_note")
	waitStatus(t, first, 2, taskID, "/approvals/"+id)
	_ = first.conn.Close()

	other := taskGateway(t, h, n, dir, e.APIKey())
	other.send(3, "tasks/get", `{"taskId":"`+taskID+`"}`)
	if r := other.response(3, 5*time.Second); r.Error == nil {
		t.Fatalf("a process with another key got the task: %s", r.Result)
	}
	other.send(4, "tasks/list", `{}`)
	if r := other.response(4, 5*time.Second); r.Error != nil || strings.Contains(string(r.Result), taskID) {
		t.Fatalf("a process with another key listed the task: %v %s", r.Error, r.Result)
	}
	time.Sleep(500 * time.Millisecond)
	h.decide(t, id, url.Values{"decision": {"approve"}})
	second := taskGateway(t, h, n, dir, key)
	second.send(5, "tasks/result", `{"taskId":"`+taskID+`"}`)
	if a := decodeTask(t, second.response(5, 20*time.Second)); a.IsError || len(a.Content) != 1 || a.Content[0].Text != "written" {
		t.Fatalf("tasks/result in the key's own process: %+v", a)
	}
}
