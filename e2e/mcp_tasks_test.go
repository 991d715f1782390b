package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// MCP tasks through `countersign mcp`: a client on the official TypeScript
// SDK that declares tasks (e2e/mcp/tasks.mjs), a real MCP server
// (e2e/mcp/recorder.mjs, which logs each call it runs), a real Countersign
// and a person deciding in Chromium.

// taskStep is one line tasks.mjs prints.
type taskStep struct {
	Step          string          `json:"step"`
	TaskID        string          `json:"taskId"`
	Status        string          `json:"status"`
	StatusMessage string          `json:"statusMessage"`
	PID           int             `json:"pid"`
	IsError       bool            `json:"isError"`
	Text          string          `json:"text"`
	Code          *string         `json:"code"`
	Related       *string         `json:"related"`
	Mode          string          `json:"mode"`
	URL           string          `json:"url"`
	Message       string          `json:"message"`
	Has           bool            `json:"has"`
	Execution     json.RawMessage `json:"execution"`
	Tasks         json.RawMessage `json:"tasks"`
}

// tasksClient is tasks.mjs running.
type tasksClient struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	steps  chan taskStep
	stderr *bytes.Buffer
	all    []taskStep
}

func mcpNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat("mcp/node_modules/@modelcontextprotocol/sdk/package.json")
	}
	if err != nil {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			t.Fatalf("the MCP tasks end-to-end needs node and `npm ci` in e2e/mcp: %v", err)
		}
		t.Skipf("node or e2e/mcp/node_modules missing (%v); run `npm ci` in e2e/mcp", err)
	}
	return node
}

func startTasksClient(t *testing.T, node, bin string, e *testenv.Env, taskDir, log, mode, note string) *tasksClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, node, "tasks.mjs", bin, taskDir, log, mode, note)
	cmd.Dir = "mcp"
	cmd.Env = append(os.Environ(), "COUNTERSIGN_URL="+e.BaseURL, "COUNTERSIGN_API_KEY="+e.APIKey(),
		"COUNTERSIGN_USER="+dev.DemoMember.Subject)
	c := &tasksClient{cmd: cmd, steps: make(chan taskStep, 64), stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.steps)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var s taskStep
			if json.Unmarshal(sc.Bytes(), &s) != nil {
				s = taskStep{Step: "unparsed", Text: sc.Text()}
			}
			c.steps <- s
		}
	}()
	return c
}

// next is the client's next step; the end of its output is a failure.
func (c *tasksClient) next(t *testing.T) taskStep {
	t.Helper()
	select {
	case s, ok := <-c.steps:
		if !ok {
			err := c.cmd.Wait()
			t.Fatalf("the client ended (%v) after %+v\n%s", err, c.all, c.stderr.String())
		}
		t.Logf("client: %+v", s)
		c.all = append(c.all, s)
		return s
	case <-time.After(90 * time.Second):
		t.Fatalf("no step from the client after %+v\n%s", c.all, c.stderr.String())
	}
	return taskStep{}
}

// until reads steps up to the first named one.
func (c *tasksClient) until(t *testing.T, step string) taskStep {
	t.Helper()
	for {
		if s := c.next(t); s.Step == step {
			return s
		}
	}
}

// rest reads the steps up to the end of the client, which must succeed.
func (c *tasksClient) rest(t *testing.T) map[string]taskStep {
	t.Helper()
	for s := range c.steps {
		t.Logf("client: %+v", s)
		c.all = append(c.all, s)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("client: %v\n%s", err, c.stderr.String())
	}
	t.Logf("gateway and client stderr:\n%s", c.stderr.String())
	last := map[string]taskStep{}
	for _, s := range c.all {
		last[s.Step] = s
	}
	return last
}

func buildCountersign(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "countersign")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/countersign").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// runs is how many times the recorder ran a call.
func runs(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func pendingRecord(t *testing.T, e *testenv.Env) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var id string
		err := e.DB.Pool.QueryRow(context.Background(),
			`SELECT id::text FROM approvals WHERE tool = 'record' AND status = 'pending'`).Scan(&id)
		if err == nil {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pending record item: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// decideInChromium opens the request page (by the link the client was
// given) and approves, or rejects with words.
func decideInChromium(t *testing.T, ctx context.Context, link, decision, words string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(link)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, `!!document.querySelector('#approval-page button[value="approve"]')`, "the request page has no decision")
	var actions []chromedp.Action[chromedp.Void]
	if words != "" {
		actions = append(actions, chromedp.SendKeys(chromedp.CSS(`#approval-page textarea[name="reason"]`), words))
	}
	actions = append(actions, chromedp.Click(chromedp.CSS(`#approval-page button[value="`+decision+`"]`)))
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, `!!document.querySelector('[data-testid="outcome-label"]')`, "no outcome on the page")
}

func mcpTaskCount(t *testing.T, e *testenv.Env, q string) int {
	t.Helper()
	var n int
	if err := e.DB.Pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMCPTaskApprovedInChromium(t *testing.T) {
	node := mcpNode(t)
	e := testenv.NewEnv(t)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	bin := buildCountersign(t)
	dir := t.TempDir()
	taskDir, log := filepath.Join(dir, "tasks"), filepath.Join(dir, "runs.log")

	c := startTasksClient(t, node, bin, e, taskDir, log, "stream", "approved <b>note</b>")
	list := c.until(t, "list")
	if !strings.Contains(string(list.Execution), `"taskSupport":"optional"`) || !strings.Contains(string(list.Tasks), `"call"`) {
		t.Fatalf("the gateway does not offer tasks: %+v", list)
	}
	created := c.until(t, "created")
	if created.TaskID == "" || created.Status != "working" {
		t.Fatalf("created %+v", created)
	}
	el := c.until(t, "elicitation")
	if el.Mode != "url" || !strings.HasPrefix(el.URL, e.BaseURL+"/approvals/") || el.Related == nil || *el.Related != created.TaskID {
		t.Fatalf("elicitation %+v", el)
	}
	if n := runs(t, log); n != 0 {
		t.Fatalf("the call ran %d times before approval", n)
	}
	decideInChromium(t, ctx, el.URL, "approve", "")
	last := c.rest(t)
	if r := last["result"]; r.IsError || r.Text != "recorded: approved <b>note</b>" {
		t.Fatalf("stream result %+v", r)
	}
	if g := last["get"]; g.Status != "completed" {
		t.Fatalf("tasks/get %+v", g)
	}
	if f := last["final"]; f.IsError || f.Text != "recorded: approved <b>note</b>" || f.Related == nil || *f.Related != created.TaskID {
		t.Fatalf("tasks/result %+v", f)
	}
	if !last["listed"].Has {
		t.Fatal("tasks/list does not list the task")
	}
	if n := runs(t, log); n != 1 {
		t.Fatalf("the call ran %d times", n)
	}
	if n := mcpTaskCount(t, e, `SELECT count(*) FROM approvals WHERE tool = 'record' AND status = 'consumed'`); n != 1 {
		t.Fatalf("%d consumed items", n)
	}
}

func TestMCPTaskRejectedInChromium(t *testing.T) {
	node := mcpNode(t)
	e := testenv.NewEnv(t)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	bin := buildCountersign(t)
	dir := t.TempDir()
	taskDir, log := filepath.Join(dir, "tasks"), filepath.Join(dir, "runs.log")

	c := startTasksClient(t, node, bin, e, taskDir, log, "stream", "must not run")
	created := c.until(t, "created")
	el := c.until(t, "elicitation")
	decideInChromium(t, ctx, el.URL, "reject", "Not this week")
	last := c.rest(t)
	if g := last["get"]; g.Status != "failed" || !strings.Contains(g.StatusMessage, "Not this week") {
		t.Fatalf("tasks/get %+v", g)
	}
	f := last["final"]
	if !f.IsError || f.Code == nil || *f.Code != "approval_denied" || !strings.Contains(f.Text, "Not this week") ||
		f.Related == nil || *f.Related != created.TaskID {
		t.Fatalf("tasks/result %+v", f)
	}
	if n := runs(t, log); n != 0 {
		t.Fatalf("the rejected call ran %d times", n)
	}
}

// The gateway process is killed between the task's creation and the
// person's decision; the client starts a new one and asks about the same
// task id. The person approves while no gateway runs, or once the new
// process follows the task.
func TestMCPTaskAcrossGatewayRestart(t *testing.T) {
	for _, approveFirst := range []bool{true, false} {
		name := "ApprovedWhileNoGatewayRuns"
		if !approveFirst {
			name = "ApprovedWhileTheNewProcessFollows"
		}
		t.Run(name, func(t *testing.T) { gatewayRestart(t, approveFirst) })
	}
}

func gatewayRestart(t *testing.T, approveFirst bool) {
	node := mcpNode(t)
	e := testenv.NewEnv(t)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	bin := buildCountersign(t)
	dir := t.TempDir()
	taskDir, log := filepath.Join(dir, "tasks"), filepath.Join(dir, "runs.log")

	c := startTasksClient(t, node, bin, e, taskDir, log, "restart", "after a restart")
	created := c.until(t, "created")
	if created.TaskID == "" || created.PID == 0 {
		t.Fatalf("created %+v", created)
	}
	id := pendingRecord(t, e)
	file := filepath.Join(taskDir, created.TaskID+".json")
	deadline := time.Now().Add(20 * time.Second)
	for {
		// The gateway has noted the item it follows.
		if b, _ := os.ReadFile(file); bytes.Contains(b, []byte(id)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task file does not name the item")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("task file: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(taskDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("task directory: %v %v", fi.Mode(), err)
	}

	if err := syscall.Kill(created.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for syscall.Kill(created.PID, 0) == nil {
		time.Sleep(50 * time.Millisecond)
	}
	link := e.BaseURL + "/approvals/" + id
	if approveFirst {
		decideInChromium(t, ctx, link, "approve", "")
		if n := runs(t, log); n != 0 {
			t.Fatalf("the call ran %d times with no gateway running", n)
		}
	}
	if _, err := io.WriteString(c.stdin, "go on\n"); err != nil {
		t.Fatal(err)
	}
	if r := c.until(t, "reconnected"); r.PID == 0 || r.PID == created.PID {
		t.Fatalf("reconnected %+v", r)
	}
	if !approveFirst {
		if s := c.until(t, "status"); s.Status != "working" || !strings.Contains(s.StatusMessage, link) {
			t.Fatalf("the new process's first answer %+v", s)
		}
		decideInChromium(t, ctx, link, "approve", "")
	}
	last := c.rest(t)
	if f := last["final"]; f.IsError || f.Text != "recorded: after a restart" || f.Related == nil || *f.Related != created.TaskID {
		t.Fatalf("tasks/result %+v", f)
	}
	if s := last["status"]; s.Status != "completed" {
		t.Fatalf("last status %+v", s)
	}
	if n := runs(t, log); n != 1 {
		t.Fatalf("the call ran %d times", n)
	}
	if n := mcpTaskCount(t, e, `SELECT count(*) FROM approvals WHERE tool = 'record' AND status = 'consumed'`); n != 1 {
		t.Fatalf("%d consumed items", n)
	}
}
