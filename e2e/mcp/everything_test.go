package mcpe2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// everything is the reference server that uses every MCP feature.
const everything = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"

// frame is one JSON-RPC message as it arrived.
type frame struct {
	raw    string
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// session is a scripted MCP client on a process's stdio that answers the
// server's requests (roots, sampling, elicitation) like a real client.
type session struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	mu      sync.Mutex
	frames  []frame
	answers map[string]chan frame
}

func startSession(t *testing.T, name string, args []string, env []string) *session {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, cmd: cmd, stdin: stdin, answers: map[string]chan frame{}}
	go s.read(stdout)
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return s
}

func (s *session) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var f frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			continue
		}
		f.raw = sc.Text()
		s.mu.Lock()
		s.frames = append(s.frames, f)
		ch := s.answers[string(f.ID)]
		s.mu.Unlock()
		switch {
		case f.Method != "" && len(f.ID) > 0:
			s.answerServer(f)
		case f.Method == "" && ch != nil:
			ch <- f
		}
	}
}

// answerServer is the client's side of the server's requests.
func (s *session) answerServer(f frame) {
	var result string
	switch f.Method {
	case "roots/list":
		result = `{"roots":[{"uri":"file:///tmp/countersign-e2e","name":"e2e"}]}`
	case "sampling/createMessage":
		result = `{"role":"assistant","content":{"type":"text","text":"a sampled answer"},"model":"fake-model","stopReason":"endTurn"}`
	case "elicitation/create":
		result = `{"action":"decline"}`
	default:
		result = `{}`
	}
	s.write(`{"jsonrpc":"2.0","id":` + string(f.ID) + `,"result":` + result + `}`)
}

func (s *session) write(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Logf("write: %v", err)
	}
}

// call sends a request and waits for its answer.
func (s *session) call(id int, method, params string) frame {
	s.t.Helper()
	ch := s.expect(id)
	s.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	select {
	case f := <-ch:
		return f
	case <-time.After(60 * time.Second):
		s.t.Fatalf("no answer to %d %s", id, method)
	}
	return frame{}
}

func (s *session) expect(id int) chan frame {
	ch := make(chan frame, 1)
	s.mu.Lock()
	s.answers[strconv.Itoa(id)] = ch
	s.mu.Unlock()
	return ch
}

func (s *session) notify(method, params string) {
	s.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`, method, params))
}

func (s *session) snapshot() []frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.frames)
}

const everythingInit = `{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{}}},"clientInfo":{"name":"countersign-e2e","version":"1"}}`

// script runs the same session on s: afterInit runs between initialized
// and the first list. It returns the answers by request id.
func script(t *testing.T, s *session, afterInit func()) map[int]frame {
	got := map[int]frame{}
	got[0] = s.call(0, "initialize", everythingInit)
	s.notify("notifications/initialized", `{}`)
	afterInit()
	id := 1
	do := func(method, params string) frame {
		f := s.call(id, method, params)
		got[id] = f
		id++
		return f
	}
	do("tools/list", `{}`)
	do("resources/list", `{}`)
	do("resources/templates/list", `{}`)
	do("prompts/list", `{}`)
	do("prompts/get", `{"name":"simple-prompt"}`)
	do("resources/read", `{"uri":"demo://resource/static/document/architecture.md"}`)
	do("logging/setLevel", `{"level":"debug"}`)
	do("tools/call", `{"name":"toggle-simulated-logging","arguments":{}}`)
	for _, c := range []string{
		`{"name":"echo","arguments":{"message":"héllo \u2603 <b>&"}}`,
		`{"name":"get-annotated-message","arguments":{"messageType":"success","includeImage":true}}`,
		`{"name":"get-env","arguments":{}}`,
		`{"name":"get-resource-links","arguments":{"count":3}}`,
		`{"name":"get-resource-reference","arguments":{"resourceType":"Text","resourceId":2}}`,
		`{"name":"get-structured-content","arguments":{"location":"Chicago"}}`,
		`{"name":"get-sum","arguments":{"a":2,"b":2.5}}`,
		`{"name":"get-tiny-image","arguments":{}}`,
		`{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":2},"_meta":{"progressToken":"lro"}}`,
		`{"name":"get-roots-list","arguments":{}}`,
		`{"name":"trigger-sampling-request","arguments":{"prompt":"say hi","maxTokens":10}}`,
		`{"name":"trigger-elicitation-request","arguments":{}}`,
		`{"name":"simulate-research-query","arguments":{"topic":"otters"},"task":{"ttl":60000}}`,
	} {
		do("tools/call", c)
	}
	// A task-augmented call answers with its task; its result follows.
	var task struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	_ = json.Unmarshal(got[id-1].Result, &task)
	if task.Task.TaskID != "" {
		do("tasks/result", `{"taskId":"`+task.Task.TaskID+`"}`)
	}
	do("tools/call", `{"name":"toggle-simulated-logging","arguments":{}}`)
	// A cancel: the server stops, and nothing answers the request.
	s.expect(900)
	s.write(`{"jsonrpc":"2.0","id":900,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":3,"steps":3}}}`)
	time.Sleep(300 * time.Millisecond)
	s.notify("notifications/cancelled", `{"requestId":900,"reason":"stop"}`)
	do("ping", `{}`)
	time.Sleep(3500 * time.Millisecond)
	return got
}

// varying are the parts of an answer that differ from run to run: ids
// (UUIDs, task ids), times, and the gateway's stripped COUNTERSIGN_* environment.
var varying = regexp.MustCompile(`\b[0-9a-f]{32}\b|\b\d{1,2}:\d\d:\d\d [AP]M\b|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z|\\"COUNTERSIGN_[A-Z_]+\\": *\\"[^\\]*\\",?`)

func normal(raw json.RawMessage) string {
	return varying.ReplaceAllString(string(raw), "…")
}

// methods counts the notifications and server requests of a session.
func methods(fs []frame) map[string]int {
	m := map[string]int{}
	for _, f := range fs {
		if f.Method != "" {
			m[f.Method]++
		}
	}
	return m
}

// gatewaySetup builds the countersign binary and writes the key to a 0600
// file (keyFile); env is this process's environment without COUNTERSIGN_ variables
// (for the server direct), gwEnv the same with the gateway's settings.
func gatewaySetup(t *testing.T, e *testenv.Env) (bin, keyFile string, env, gwEnv []string) {
	t.Helper()
	bin = filepath.Join(t.TempDir(), "countersign")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/countersign").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	keyFile = filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(e.APIKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COUNTERSIGN_") {
			env = append(env, kv)
		}
	}
	gwEnv = append(slices.Clone(env), "COUNTERSIGN_URL="+e.BaseURL, "COUNTERSIGN_API_KEY_FILE="+keyFile,
		"COUNTERSIGN_USER="+dev.DemoMember.Subject)
	return bin, keyFile, env, gwEnv
}

func TestEverythingServerDirectAndThroughGateway(t *testing.T) {
	node := requireTools(t)
	requireFile(t, everything)
	e := testenv.NewEnv(t)
	member := e.NewBrowser()
	member.SignIn("member")
	bin, _, env, gwEnv := gatewaySetup(t, e)
	gwArgs := []string{"mcp", "--connector", "everything", "--hold", "20s", "--", node, everything, "stdio"}

	direct := startSession(t, node, []string{everything, "stdio"}, env)
	want := script(t, direct, func() {})
	var listed struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(want[1].Result, &listed); err != nil || len(listed.Tools) < 10 {
		t.Fatalf("direct tools/list: %s %v", want[1].raw, err)
	}
	allowAll := func() {
		for deadline := time.Now().Add(15 * time.Second); count(t, e, `SELECT count(*) FROM tools WHERE connector = 'everything'`) < len(listed.Tools); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the gateway did not register the server's tools")
			}
		}
		if _, err := e.DB.Pool.Exec(context.Background(), `UPDATE tools SET mode = 'allow' WHERE connector = 'everything'`); err != nil {
			t.Fatal(err)
		}
	}
	gw := startSession(t, bin, gwArgs, gwEnv)
	got := script(t, gw, allowAll)

	for id, w := range want {
		g := got[id]
		if normal(w.Result) != normal(g.Result) || normal(w.Error) != normal(g.Error) {
			t.Errorf("answer %d differs:\ndirect  %s%s\ngateway %s%s", id, w.Result, w.Error, g.Result, g.Error)
		}
	}
	wm, gm := methods(direct.snapshot()), methods(gw.snapshot())
	t.Logf("direct: %v\ngateway: %v", wm, gm)
	for _, m := range []string{"notifications/message", "notifications/progress", "roots/list", "sampling/createMessage", "elicitation/create"} {
		if wm[m] == 0 || gm[m] == 0 {
			t.Errorf("%s: direct %d, through the gateway %d", m, wm[m], gm[m])
		}
	}
	for _, m := range []string{"roots/list", "sampling/createMessage", "elicitation/create", "notifications/progress"} {
		if wm[m] != gm[m] {
			t.Errorf("%s: direct %d, through the gateway %d", m, wm[m], gm[m])
		}
	}
	for _, s := range []*session{direct, gw} {
		for _, f := range s.snapshot() {
			if string(f.ID) == "900" && f.Method == "" {
				t.Errorf("an answer after the cancel: %s", f.raw)
			}
		}
	}
	if n := count(t, e, `SELECT count(*) FROM approvals`); n != 0 {
		t.Fatalf("%d items for calls the policy allows", n)
	}

	// The added time of an allowed call, beside the direct one, in the
	// same run: printed, never asserted.
	p50 := func(s *session, base int) time.Duration {
		var ds []time.Duration
		for i := range 40 {
			start := time.Now()
			s.call(base+i, "tools/call", `{"name":"get-sum","arguments":{"a":1,"b":`+strconv.Itoa(i)+`}}`)
			ds = append(ds, time.Since(start))
		}
		sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
		return ds[len(ds)/2]
	}
	p50(direct, 1000) // warm both
	p50(gw, 1000)
	d, g := p50(direct, 2000), p50(gw, 2000)
	fmt.Printf("allowed call p50: direct %s, through the gateway %s, added %s\n", d, g, g-d)
	t.Logf("allowed call p50: direct %s, through the gateway %s, added %s", d, g, g-d)

	// A held call: progress while it waits, then approve, then the result.
	if _, err := e.DB.Pool.Exec(context.Background(), `UPDATE tools SET mode = 'require_approval' WHERE connector = 'everything' AND name = 'echo'`); err != nil {
		t.Fatal(err)
	}
	ch := gw.expect(3000)
	gw.write(`{"jsonrpc":"2.0","id":3000,"method":"tools/call","params":{"name":"echo","arguments":{"message":"held"},"_meta":{"progressToken":"held"}}}`)
	id := waitPending(t, e, "echo")
	decide(t, member, id, url.Values{"decision": {"approve"}})
	select {
	case f := <-ch:
		if !strings.Contains(string(f.Result), "Echo: held") {
			t.Fatalf("held call: %s", f.raw)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the approved call never answered")
	}
	// A cancel of a held call leaves no pending item and no answer.
	gw.expect(3001)
	gw.write(`{"jsonrpc":"2.0","id":3001,"method":"tools/call","params":{"name":"echo","arguments":{"message":"cancelled"}}}`)
	waitPending(t, e, "echo")
	gw.notify("notifications/cancelled", `{"requestId":3001,"reason":"stop"}`)
	for deadline := time.Now().Add(10 * time.Second); count(t, e, `SELECT count(*) FROM approvals WHERE status = 'pending'`) != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled call's item is still pending")
		}
	}
	time.Sleep(500 * time.Millisecond)
	for _, f := range gw.snapshot() {
		if string(f.ID) == "3001" && f.Method == "" {
			t.Fatalf("an answer after the cancel: %s", f.raw)
		}
	}
}

// requireFile skips the test when an npm package is not installed, unless
// COUNTERSIGN_E2E=1, where it fails.
func requireFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			t.Fatalf("%s missing; run npm ci in e2e/mcp: %v", path, err)
		}
		t.Skipf("%s missing; run npm ci in e2e/mcp", path)
	}
}

func waitPending(t *testing.T, e *testenv.Env, tool string) string {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var id string
		if e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE tool = $1 AND status = 'pending'`, tool).Scan(&id) == nil {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pending %s item", tool)
		}
	}
}
