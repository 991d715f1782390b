package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/hook"
)

// The Codex app-server end-to-end tests drive the pinned `codex
// app-server` through `countersign codex-app-server`, with a scripted
// JSON-RPC client written here (an IDE's part), a fake Responses model
// served by the test, a real Countersign and a person in Chromium.

// appMsg is one message the client received.
type appMsg struct {
	Raw    string
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// appClient is the scripted IDE: it speaks to countersign codex-app-server
// on its stdin and stdout.
type appClient struct {
	t      *testing.T
	in     io.WriteCloser
	mu     sync.Mutex
	msgs   []appMsg
	wake   chan struct{}
	nextID int
	done   chan struct{}
	work   string
	home   string      // CODEX_HOME
	proc   *os.Process // countersign codex-app-server
	model  *fakeModel
	stderr strings.Builder
}

// startAppServer starts countersign codex-app-server in front of the
// pinned codex app-server, in a fresh CODEX_HOME and workspace, against a
// fake model with the script, and initializes it as an IDE would.
func (s *agentSetup) startAppServer(t *testing.T, countersignURL string, script ...toolCall) *appClient {
	t.Helper()
	home, work := t.TempDir(), t.TempDir()
	if s.prepareWork != nil {
		s.prepareWork(t, work)
	}
	c := &appClient{t: t, wake: make(chan struct{}, 1), done: make(chan struct{}), work: work, home: home}
	c.model = newFakeModel(t, openAIResponses, script...)
	config := strings.Join([]string{
		`model = "gpt-5.5"`,
		`model_provider = "fake"`,
		``,
		`[model_providers.fake]`,
		`name = "Fake model"`,
		`base_url = "` + c.model.URL + `/v1"`,
		`wire_api = "responses"`,
		`env_key = "FAKE_MODEL_API_KEY"`,
		`request_max_retries = 0`,
		`stream_max_retries = 0`,
		``,
	}, "\n")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	cmd := exec.CommandContext(ctx, s.hook, "codex-app-server", "-v", "--url", countersignURL, "--user", dev.DemoMember.Subject,
		"--api-key-file", s.keyFile, "--", filepath.Join(s.bin, "codex"), "app-server")
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb", "HOME=" + home, "CODEX_HOME=" + home,
		"FAKE_MODEL_API_KEY=sk-fake-model-key", "COUNTERSIGN_API_KEY=" + s.key}
	cmd.Stderr = &sharedLockWriter{b: &c.stderr, mu: &c.mu}
	cmd.WaitDelay = 5 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.in = in
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	c.proc = cmd.Process
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m appMsg
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = appMsg{}
			}
			m.Raw = sc.Text()
			c.mu.Lock()
			c.msgs = append(c.msgs, m)
			c.mu.Unlock()
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
		_ = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = in.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
		}
		cancel()
		<-c.done
		if t.Failed() {
			c.mu.Lock()
			var b strings.Builder
			for _, m := range c.msgs {
				b.WriteString(m.Raw[:min(len(m.Raw), 2000)] + "\n")
			}
			t.Logf("client received:\n%s\nstderr:\n%s", b.String(), c.stderr.String())
			c.mu.Unlock()
		}
	})
	var init struct {
		UserAgent string `json:"userAgent"`
	}
	c.request("initialize", map[string]any{"clientInfo": map[string]any{"name": "e2e-ide", "title": "E2E IDE", "version": "1.2.3"}}, &init)
	c.send(map[string]any{"method": "initialized"})
	return c
}

type sharedLockWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (l *sharedLockWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (c *appClient) send(msg any) {
	c.t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// request sends a request and waits for its answer, decoded into out.
func (c *appClient) request(method string, params, out any) {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.send(map[string]any{"id": id, "method": method, "params": params})
	m := c.waitFor(method+" answer", func(m appMsg) bool { return m.Method == "" && string(m.ID) == jsonInt(id) })
	if len(m.Error) > 0 && string(m.Error) != "null" {
		c.t.Fatalf("%s: %s", method, m.Error)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s answer: %v", method, err)
		}
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// waitFor waits for the first message received that matches.
func (c *appClient) waitFor(what string, match func(appMsg) bool) appMsg {
	c.t.Helper()
	deadline := time.After(cliTimeout)
	for {
		c.mu.Lock()
		for _, m := range c.msgs {
			if match(m) {
				c.mu.Unlock()
				return m
			}
		}
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-c.done:
			c.mu.Lock()
			n := len(c.msgs)
			c.mu.Unlock()
			select {
			case <-c.wake:
				continue
			default:
			}
			c.mu.Lock()
			if len(c.msgs) == n {
				c.mu.Unlock()
				c.t.Fatalf("the app-server ended before %s", what)
			}
			c.mu.Unlock()
		case <-deadline:
			c.t.Fatalf("no %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// received reports whether any message matches.
func (c *appClient) received(match func(appMsg) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.msgs {
		if match(m) {
			return true
		}
	}
	return false
}

// startTurn starts a thread in the workspace with the approval policy
// "untrusted" (Codex asks before any command it does not know to be safe)
// and one turn; it returns the thread and turn ids.
func (c *appClient) startTurn() (thread, turn string) {
	c.t.Helper()
	return c.startTurnIn("workspace-write")
}

// startTurnIn is startTurn with the sandbox given.
func (c *appClient) startTurnIn(sandbox string) (thread, turn string) {
	c.t.Helper()
	var ts struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	c.request("thread/start", map[string]any{"cwd": c.work, "approvalPolicy": "untrusted", "sandbox": sandbox}, &ts)
	var tr struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	c.request("turn/start", map[string]any{"threadId": ts.Thread.ID,
		"input": []any{map[string]any{"type": "text", "text": "Follow the plan."}}}, &tr)
	if ts.Thread.ID == "" || tr.Turn.ID == "" {
		c.t.Fatalf("thread %q turn %q", ts.Thread.ID, tr.Turn.ID)
	}
	return ts.Thread.ID, tr.Turn.ID
}

// itemDone waits for item/completed of the n'th item of the type (0 the
// first) and returns the item.
func (c *appClient) itemDone(itemType string, n int) map[string]any {
	c.t.Helper()
	seen := 0
	var item map[string]any
	c.waitFor("item/completed of "+itemType, func(m appMsg) bool {
		if m.Method != "item/completed" {
			return false
		}
		var p struct {
			Item map[string]any `json:"item"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.Item["type"] != itemType {
			return false
		}
		if seen < n {
			seen++
			return false
		}
		item = p.Item
		return true
	})
	return item
}

// turnDone waits for turn/completed and returns the turn's status.
func (c *appClient) turnDone() string {
	c.t.Helper()
	m := c.waitFor("turn/completed", func(m appMsg) bool { return m.Method == "turn/completed" })
	var p struct {
		Turn struct {
			Status string `json:"status"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return p.Turn.Status
}

// sawApprovalRequest: the client itself was asked (the proxy did not
// answer).
func (c *appClient) sawApprovalRequest() bool {
	return c.received(func(m appMsg) bool { return strings.HasSuffix(m.Method, "/requestApproval") })
}

// pendingFor waits for the pending item of a tool while the app-server
// runs, and returns its call id.
func (s *agentSetup) pendingFor(t *testing.T, c *appClient, connector, tool string) string {
	t.Helper()
	deadline := time.Now().Add(cliTimeout)
	for {
		var callID string
		err := s.e.DB.Pool.QueryRow(context.Background(), `SELECT call_id FROM approvals
			WHERE connector = $1 AND tool = $2 AND status = 'pending'`, connector, tool).Scan(&callID)
		if err == nil {
			return callID
		}
		select {
		case <-c.done:
			t.Fatalf("the app-server ended without a pending %s · %s item", connector, tool)
		default:
		}
		if time.Now().After(deadline) || c.sawApprovalRequest() {
			t.Fatalf("no pending %s · %s item (the client was asked itself: %v)", connector, tool, c.sawApprovalRequest())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// standing registers one of Codex's tools and lets its policy offer
// standing approval, so that the card's standing decisions are the ones
// the app-server offers.
func (s *agentSetup) standing(t *testing.T, tool string) {
	t.Helper()
	target, err := hook.CodexTarget(tool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(s.e.BaseURL, s.key).RegisterTool(context.Background(), target.Connector, target.Registration); err != nil {
		t.Fatal(err)
	}
	if _, err := s.e.DB.SetToolPolicy(context.Background(), approval.SystemActor, target.Connector, target.Tool, approval.Policy{
		Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
		t.Fatal(err)
	}
}

// read scrolls the card as a person reads it: its red flags, then its end
// (Approve is held until both have been on screen, static/ready.js).
func (s *agentSetup) read(t *testing.T, card string) {
	t.Helper()
	for _, js := range []string{
		`(() => { const f = document.querySelector('` + card + ` [data-call-flags]'); if (f) f.scrollIntoView({block: 'start'}); return true })()`,
		`(() => { document.querySelector('` + card + ` form.decide').scrollIntoView({block: 'end'}); return true })()`,
	} {
		eval[bool](t, s.tab, js)
		time.Sleep(150 * time.Millisecond)
	}
}

// decideRead reads the call's card and makes the person's decision on it
// (confirming a standing one), until the item is no longer pending.
func (s *agentSetup) decideRead(t *testing.T, callID, decision, words string) {
	t.Helper()
	card := cardFor(t, s.tab, s.e, callID)
	if words != "" {
		if err := chromedp.Do(s.tab, chromedp.SendKeys(chromedp.CSS(card+` textarea`), words)); err != nil {
			t.Fatal(err)
		}
	}
	standing := decision == "approve_conversation" || decision == "always"
	for range 5 {
		s.read(t, card)
		actions := []chromedp.Action[chromedp.Void]{chromedp.Click(chromedp.CSS(card + ` button[value="` + decision + `"]`))}
		if standing {
			actions = append(actions, chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm-standing"]`)),
				chromedp.Click(chromedp.CSS(`[data-testid="confirm-standing"]`)))
		}
		if err := chromedp.Do(s.tab, actions...); err != nil {
			t.Fatalf("%s in the inbox: %v", decision, err)
		}
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if s.count(t, `SELECT count(*) FROM approvals WHERE call_id = $1 AND status = 'pending'`, callID) == 0 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%s did not take: %s", decision, eval[string](t, s.tab, `(document.querySelector('`+card+` [data-ready-status]') || {}).textContent || ''`))
	}
	t.Fatalf("%s in the inbox did not decide the item", decision)
}

// answered counts the approval requests the proxy answered (its debug log).
func (c *appClient) answered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Count(c.stderr.String(), "answering an approval request")
}

func TestCodexAppServer(t *testing.T) {
	s := newAgentSetup(t)
	s.standing(t, "Bash")
	s.standing(t, "apply_patch")

	t.Run("ApprovedCommandRunsOnce", func(t *testing.T) {
		c := s.startAppServer(t, s.e.BaseURL, toolCall{"exec_command", `{"cmd":"echo approved >> out.txt; env > env.txt"}`})
		thread, turn := c.startTurn()
		callID := s.pendingFor(t, c, "codex", "Bash")
		if _, err := os.Stat(filepath.Join(c.work, "out.txt")); err == nil {
			t.Fatal("the command ran before the person approved")
		}
		var conv, turnID, runtime, args string
		if err := s.e.DB.Pool.QueryRow(context.Background(), `SELECT conversation_id, turn_id, runtime_client, preview::text
			FROM approvals WHERE call_id = $1`, callID).Scan(&conv, &turnID, &runtime, &args); err != nil {
			t.Fatal(err)
		}
		if conv != thread || turnID != turn {
			t.Fatalf("item's conversation/turn %q/%q, want the thread's %q/%q", conv, turnID, thread, turn)
		}
		if runtime != "E2E IDE 1.2.3 through Codex app-server" {
			t.Fatalf("the card names the runtime %q", runtime)
		}
		card := cardFor(t, s.tab, s.e, callID)
		// The policy offers every standing decision; the app-server offers
		// accept, its execpolicy amendment and cancel: the card offers
		// Approve and Reject only (no whole-tool "Always allow", and no
		// Countersign scope within the amendment for a chain).
		offered := eval[string](t, s.tab, `[...document.querySelectorAll('`+card+` button[name="decision"]')].map(b => b.value).join(',')`)
		if offered != "approve,reject" {
			t.Fatalf("the card offers %s", offered)
		}
		shown := text(t, s.tab, card)
		for _, want := range []string{"echo approved >> out.txt; env > env.txt", "E2E IDE 1.2.3 through Codex app-server", c.work} {
			if !strings.Contains(shown, want) {
				t.Fatalf("the card does not show %q:\n%s", want, shown)
			}
		}
		s.decideRead(t, callID, "approve", "")
		item := c.itemDone("commandExecution", 0)
		if item["status"] != "completed" {
			t.Fatalf("the command item ended %v", item["status"])
		}
		c.turnDone()
		if b, err := os.ReadFile(filepath.Join(c.work, "out.txt")); err != nil || string(b) != "approved\n" {
			t.Fatalf("out.txt: %q %v (the command ran not exactly once)", b, err)
		}
		if b, err := os.ReadFile(filepath.Join(c.work, "env.txt")); err != nil || !strings.Contains(string(b), "PATH=") {
			t.Fatalf("the command did not write its environment: %v", err)
		}
		if files := keyIn(t, c.work, s.key); len(files) > 0 {
			t.Fatalf("the API key reached the workspace: %v", files)
		}
		if c.sawApprovalRequest() {
			t.Fatal("the client was sent the approval request the proxy answered")
		}
		if n := s.count(t, `SELECT count(*) FROM approvals WHERE call_id = $1 AND status = 'consumed'`, callID); n != 1 {
			t.Fatalf("%d consumed items for the call", n)
		}
	})

	t.Run("RejectedCommandIsDeclined", func(t *testing.T) {
		c := s.startAppServer(t, s.e.BaseURL, toolCall{"exec_command", `{"cmd":"echo rejected >> out.txt"}`})
		c.startTurn()
		callID := s.pendingFor(t, c, "codex", "Bash")
		s.decideRead(t, callID, "reject", "Not on a Friday afternoon")
		item := c.itemDone("commandExecution", 0)
		if item["status"] != "declined" {
			t.Fatalf("the rejected command's item ended %v", item["status"])
		}
		c.turnDone()
		if _, err := os.Stat(filepath.Join(c.work, "out.txt")); err == nil {
			t.Fatal("the rejected command ran")
		}
		// The decline carries no words: the model gets them as input.
		if !strings.Contains(c.model.received(), "Not on a Friday afternoon") {
			t.Fatalf("the model was not given the person's words:\n%.3000s", c.model.received())
		}
		if c.received(func(m appMsg) bool { return strings.Contains(string(m.ID), "countersign-") }) {
			t.Fatal("the client was sent the answer to the proxy's own request")
		}
	})

	// A patch that changes a file and adds one: the card shows the diff of
	// the changes the app-server announced, and the files become what the
	// card showed.
	t.Run("FileChangeShowsItsDiff", func(t *testing.T) {
		s.prepareWork = func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		defer func() { s.prepareWork = nil }()
		c := s.startAppServer(t, s.e.BaseURL, toolCall{"apply_patch",
			"*** Begin Patch\n*** Update File: notes.txt\n@@\n one\n-two\n+TWO \u202e reviewed\n three\n*** Add File: added.txt\n+added line\n*** End Patch\n"})
		c.startTurnIn("read-only")
		callID := s.pendingFor(t, c, "codex", "apply_patch")
		card := cardFor(t, s.tab, s.e, callID)
		// A file change answers accept, acceptForSession, decline or cancel:
		// no "Always allow", whatever the policy offers.
		offered := eval[string](t, s.tab, `[...document.querySelectorAll('`+card+` button[name="decision"]')].map(b => b.value).join(',')`)
		if offered != "approve,reject,approve_conversation" {
			t.Fatalf("the file change's card offers %s", offered)
		}
		diff := text(t, s.tab, card+` [data-testid="diff"]`)
		for _, want := range []string{"notes.txt", "added.txt", "two", "TWO ⟨U+202E⟩ reviewed", "added line"} {
			if !strings.Contains(diff, want) {
				t.Fatalf("the card's diff does not show %q:\n%s", want, diff)
			}
		}
		if _, err := os.Stat(filepath.Join(c.work, "added.txt")); err == nil {
			t.Fatal("the patch landed before the person approved")
		}
		s.decideRead(t, callID, "approve", "")
		item := c.itemDone("fileChange", 0)
		if item["status"] != "completed" {
			t.Fatalf("the file change ended %v", item["status"])
		}
		c.turnDone()
		for name, want := range map[string]string{"notes.txt": "one\nTWO \u202e reviewed\nthree\n", "added.txt": "added line\n"} {
			if b, err := os.ReadFile(filepath.Join(c.work, name)); err != nil || string(b) != want {
				t.Fatalf("%s is %q (%v), the card showed %q", name, b, err, want)
			}
		}
		if c.sawApprovalRequest() {
			t.Fatal("the client was sent the approval request the proxy answered")
		}
	})

	// The IDE interrupts the turn while the person has not answered: the
	// app-server resolves its request, and the proxy cancels the item.
	t.Run("InterruptedTurnCancelsTheItem", func(t *testing.T) {
		c := s.startAppServer(t, s.e.BaseURL, toolCall{"exec_command", `{"cmd":"echo interrupted >> out.txt"}`})
		thread, turn := c.startTurn()
		callID := s.pendingFor(t, c, "codex", "Bash")
		c.request("turn/interrupt", map[string]any{"threadId": thread, "turnId": turn}, nil)
		if status := c.turnDone(); status != "interrupted" {
			t.Fatalf("the turn ended %q", status)
		}
		deadline := time.Now().Add(10 * time.Second)
		for s.count(t, `SELECT count(*) FROM approvals WHERE call_id = $1 AND status = 'cancelled'`, callID) != 1 {
			if time.Now().After(deadline) {
				t.Fatal("the interrupted turn's item was not cancelled")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := os.Stat(filepath.Join(c.work, "out.txt")); err == nil {
			t.Fatal("the interrupted command ran")
		}
		if c.sawApprovalRequest() {
			t.Fatal("the client was asked")
		}
	})

	// "Allow in this conversation" on a file change is Codex's
	// acceptForSession: its next change to the same file in the thread
	// runs without a request, so without a card.
	t.Run("AcceptForSessionCoversTheThread", func(t *testing.T) {
		s.prepareWork = func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		defer func() { s.prepareWork = nil }()
		c := s.startAppServer(t, s.e.BaseURL,
			toolCall{"apply_patch", "*** Begin Patch\n*** Update File: notes.txt\n@@\n-one\n+ONE\n two\n*** End Patch\n"},
			toolCall{"apply_patch", "*** Begin Patch\n*** Update File: notes.txt\n@@\n ONE\n-two\n+TWO\n*** End Patch\n"})
		thread, _ := c.startTurnIn("read-only")
		callID := s.pendingFor(t, c, "codex", "apply_patch")
		s.decideRead(t, callID, "approve_conversation", "")
		for n := range 2 {
			if item := c.itemDone("fileChange", n); item["status"] != "completed" {
				t.Fatalf("file change %d ended %v", n, item["status"])
			}
		}
		c.turnDone()
		if b, err := os.ReadFile(filepath.Join(c.work, "notes.txt")); err != nil || string(b) != "ONE\nTWO\n" {
			t.Fatalf("notes.txt: %q %v", b, err)
		}
		if n := c.answered(); n != 1 {
			t.Fatalf("the app-server asked %d times; acceptForSession should have covered the second change", n)
		}
		if n := s.count(t, `SELECT count(*) FROM approvals WHERE conversation_id = $1`, thread); n != 1 {
			t.Fatalf("%d items in the thread", n)
		}
	})

	// The proxy killed outright: the app-server and everything it started
	// end with it, so nothing runs unguarded.
	t.Run("AppServerDiesWithTheProxy", func(t *testing.T) {
		c := s.startAppServer(t, s.e.BaseURL)
		kids := descendants(c.proc.Pid)
		if len(kids) == 0 {
			t.Fatal("no app-server under the proxy")
		}
		if err := c.proc.Kill(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(15 * time.Second)
		for _, pid := range kids {
			for alive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("process %d (%s) outlived the proxy", pid, cmdline(pid))
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	})

	// Codex's execpolicy amendment is never answered with a standing grant
	// for the whole shell tool. A script with a redirection has no
	// Countersign scope within the amendment: the card offers no "Always
	// allow" of either kind, and the same command asks again.
	t.Run("AlwaysIsNeverTheWholeTool", func(t *testing.T) {
		c := s.startAppServer(t, s.e.BaseURL,
			toolCall{"exec_command", `{"cmd":"echo always >> out.txt"}`},
			toolCall{"exec_command", `{"cmd":"echo always >> out.txt"}`})
		c.startTurn()
		callID := s.pendingFor(t, c, "codex", "Bash")
		card := cardFor(t, s.tab, s.e, callID)
		offered := eval[string](t, s.tab, `[...document.querySelectorAll('`+card+` button[name="decision"]')].map(b => b.value).join(',')`)
		if offered != "approve,reject" || eval[bool](t, s.tab, `document.querySelector('`+card+` [data-testid="scoped-open"]') !== null`) {
			t.Fatalf("the command's card offers %s", offered)
		}
		s.decideRead(t, callID, "approve", "")
		c.itemDone("commandExecution", 0)
		s.decideRead(t, s.pendingFor(t, c, "codex", "Bash"), "approve", "")
		for n := range 2 {
			if item := c.itemDone("commandExecution", n); item["status"] != "completed" {
				t.Fatalf("command %d ended %v", n, item["status"])
			}
		}
		c.turnDone()
		if b, err := os.ReadFile(filepath.Join(c.work, "out.txt")); err != nil || string(b) != "always\nalways\n" {
			t.Fatalf("out.txt: %q %v", b, err)
		}
		if n := c.answered(); n != 2 {
			t.Fatalf("the app-server asked %d times; nothing standing should have covered the second command", n)
		}
	})

	// "Always allow calls like this" on a command Codex proposes its
	// execpolicy amendment for: the card parses the script inside Codex's
	// /bin/bash -lc wrapper and offers the scope. With "any options" and no
	// end, the grant is exactly Codex's prefix rule: Codex is given its
	// amendment, keeps the rule, and runs the same command again without
	// asking. Without options, Codex is told only accept: it asks again and
	// Countersign's grant answers, without a card.
	for _, c := range []struct {
		name, scope, file string
		amendment         bool
	}{{"AlwaysLikeThisWithOptionsIsCodexsRule", "0:options", "marker-a.txt", true},
		{"AlwaysLikeThisWithoutOptionsStaysCountersigns", "0:prefix", "marker-b.txt", false}} {
		t.Run(c.name, func(t *testing.T) {
			a := s.startAppServer(t, s.e.BaseURL,
				toolCall{"exec_command", `{"cmd":"touch ` + c.file + `"}`},
				toolCall{"exec_command", `{"cmd":"touch ` + c.file + `"}`})
			a.startTurn()
			callID := s.pendingFor(t, a, "codex", "Bash")
			card := cardFor(t, s.tab, s.e, callID)
			shown := text(t, s.tab, card)
			if !strings.Contains(shown, "/bin/bash -lc") || !strings.Contains(shown, "touch "+c.file) || strings.Contains(shown, "'touch "+c.file+"'") ||
				!strings.Contains(shown, "proposedExecpolicyAmendment") {
				t.Fatalf("the card does not show the script and how it runs:\n%s", shown)
			}
			s.read(t, card)
			if err := chromedp.Do(s.tab, chromedp.Click(chromedp.CSS(card+` [data-testid="scoped-open"]`)),
				chromedp.WaitVisible(chromedp.CSS(card+` [data-testid="confirm-scoped"]`)),
				chromedp.SetValue(chromedp.CSS(card+` select[name="scope"]`), c.scope),
				chromedp.Click(chromedp.CSS(card+` [data-testid="confirm-scoped"]`))); err != nil {
				t.Fatalf("always allow calls like this: %v", err)
			}
			for n := range 2 {
				if item := a.itemDone("commandExecution", n); item["status"] != "completed" {
					t.Fatalf("command %d ended %v", n, item["status"])
				}
			}
			a.turnDone()
			if _, err := os.Stat(filepath.Join(a.work, c.file)); err != nil {
				t.Fatalf("the command did not run: %v", err)
			}
			var words string
			if err := s.e.DB.Pool.QueryRow(context.Background(), `SELECT g.scope_words FROM standing_grants g JOIN approvals a ON a.id = g.approval_id
				WHERE a.call_id = $1`, callID).Scan(&words); err != nil {
				t.Fatal(err)
			}
			rules, _ := os.ReadFile(filepath.Join(a.home, "rules", "default.rules"))
			told := regexp.MustCompile(`prefix_rule\(pattern=\["touch", ?"` + regexp.QuoteMeta(c.file) + `"\], ?decision="allow"\)`).Match(rules)
			if c.amendment {
				if !told {
					t.Fatalf("Codex kept no rule for the grant %q; its rules:\n%s", words, rules)
				}
				if n := a.answered(); n != 1 {
					t.Fatalf("the app-server asked %d times; its own rule should have covered the second command", n)
				}
				return
			}
			if told || len(rules) > 0 {
				t.Fatalf("Codex was given a rule wider than the grant %q:\n%s", words, rules)
			}
			if n := a.answered(); n != 2 {
				t.Fatalf("the app-server asked %d times, want 2 (the second answered by the grant)", n)
			}
			if n := s.count(t, `SELECT count(*) FROM approvals WHERE connector = 'codex' AND tool = 'Bash' AND call_id <> $1
				AND call_id LIKE 'codex-app/%' AND created_at > (SELECT created_at FROM approvals WHERE call_id = $1)`, callID); n != 0 {
				t.Fatalf("%d more items: the grant did not answer the second command", n)
			}
		})
	}

	t.Run("UnreachableDeclines", func(t *testing.T) {
		c := s.startAppServer(t, s.closed, toolCall{"exec_command", `{"cmd":"echo unguarded >> out.txt"}`})
		c.startTurn()
		item := c.itemDone("commandExecution", 0)
		if item["status"] != "declined" {
			t.Fatalf("without Countersign the command's item ended %v", item["status"])
		}
		c.turnDone()
		if _, err := os.Stat(filepath.Join(c.work, "out.txt")); err == nil {
			t.Fatal("the command ran without Countersign")
		}
		if c.sawApprovalRequest() {
			t.Fatal("the client was asked instead")
		}
	})
}

// descendants are the processes under pid, from /proc.
func descendants(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(w); err == nil {
				out = append(out, k)
				out = append(out, descendants(k)...)
			}
		}
	}
	return out
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return strings.ReplaceAll(string(b), "\x00", " ")
}
