package e2e

import (
	"bytes"
	"context"
	"net"
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

// The agent end-to-end tests drive the real Claude Code and Codex CLIs,
// pinned in e2e/agents (install them with `npm ci` there), against a fake
// model API and a real Countersign, with a person deciding in Chromium.

// TestAgentCLIs runs every agent scenario on one Countersign, one build of
// the countersign binary and one signed-in person.
func TestAgentCLIs(t *testing.T) {
	s := newAgentSetup(t)
	t.Run("ClaudeCode", func(t *testing.T) { claudeCodeScenarios(t, s) })
	t.Run("Codex", func(t *testing.T) { codexScenarios(t, s) })
	t.Run("ToolCatalog", func(t *testing.T) { catalogScenarios(t, s) })
}

// cliTimeout bounds one run of an agent CLI.
const cliTimeout = 90 * time.Second

// agentBin is the folder of the pinned CLIs' executables, or the test is
// skipped — unless COUNTERSIGN_E2E=1, where it fails.
func agentBin(t *testing.T) string {
	t.Helper()
	_, err := exec.LookPath("node")
	bin, _ := filepath.Abs("agents/node_modules/.bin")
	for _, name := range []string{"claude", "codex"} {
		if err == nil {
			_, err = os.Stat(filepath.Join(bin, name))
		}
	}
	if err != nil {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			t.Fatalf("the agent end-to-end tests need node and `npm ci` in e2e/agents: %v", err)
		}
		t.Skipf("node or e2e/agents/node_modules missing (%v); run `npm ci` in e2e/agents", err)
	}
	return bin
}

// agentSetup is what every agent scenario shares: a running Countersign,
// a runtime key, the built countersign binary and a signed-in person.
type agentSetup struct {
	e   *testenv.Env
	key string
	// keyFile holds the key (0600), as `countersign dev` writes it.
	keyFile string
	hook    string // the countersign binary
	bin     string // the CLIs' folder
	tab     context.Context
	closed  string // an address where nothing listens
	// prepareWork, when set, prepares a run's working directory before the
	// CLI starts (a scenario sets it and clears it after).
	prepareWork func(t *testing.T, dir string)
}

// pendingOrDone waits until the CLI has a pending item for the tool (its
// call id) or has ended ("").
func (s *agentSetup) pendingOrDone(t *testing.T, r *cliRun, connector, tool string) string {
	t.Helper()
	for {
		var callID string
		err := s.e.DB.Pool.QueryRow(context.Background(), `SELECT call_id FROM approvals
			WHERE connector = $1 AND tool = $2 AND status = 'pending'`, connector, tool).Scan(&callID)
		if err == nil {
			return callID
		}
		select {
		case <-r.done:
			return ""
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// mkfifoIn makes a named pipe called name in dir.
func mkfifoIn(t *testing.T, dir, name string) {
	t.Helper()
	if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
		t.Fatal(err)
	}
}

// stillAPipe fails the test unless dir/name is still the named pipe.
func stillAPipe(t *testing.T, dir, name string) {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(dir, name))
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("%s is no longer the named pipe: %v", name, err)
	}
}

func newAgentSetup(t *testing.T) *agentSetup {
	t.Helper()
	s := &agentSetup{bin: agentBin(t)}
	s.hook = filepath.Join(t.TempDir(), "countersign")
	if out, err := exec.Command("go", "build", "-o", s.hook, "../cmd/countersign").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	s.e = testenv.NewEnv(t)
	s.key = s.e.APIKey()
	s.keyFile = filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(s.keyFile, []byte(s.key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(cancelTimeout)
	s.tab = ctx
	signIn(t, ctx, s.e, "member")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.closed = "http://" + ln.Addr().String()
	_ = ln.Close()
	return s
}

// hookCommand is the hook's command line as `countersign dev` prints it:
// the key stays in its file, never on the line an agent may show.
func (s *agentSetup) hookCommand(dialect, countersignURL string) string {
	return strings.Join([]string{s.hook, "hook", "--dialect", dialect, "--url", countersignURL,
		"--user", dev.DemoMember.Subject, "--api-key-file", s.keyFile}, " ")
}

// cliRun is one run of an agent CLI.
type cliRun struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	err            error
	cancel         context.CancelFunc
}

// startCLI starts name from the CLIs' folder in dir with only env (and
// PATH) in its environment, bounded by cliTimeout. Its output is printed
// if the test fails.
func (s *agentSetup) startCLI(t *testing.T, dir string, env []string, name string, args ...string) *cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	r := &cliRun{done: make(chan struct{}), cancel: cancel}
	r.cmd = exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	r.cmd.Dir = dir
	r.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb"}, env...)
	r.cmd.Stdin = nil
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	r.cmd.WaitDelay = 5 * time.Second
	if err := r.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
		if t.Failed() {
			t.Logf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), r.err, r.stdout.String(), r.stderr.String())
		}
	})
	return r
}

// wait waits for the run to end and fails the test unless it exited 0.
func (r *cliRun) wait(t *testing.T) {
	t.Helper()
	<-r.done
	if r.err != nil {
		t.Fatalf("the CLI ended with %v", r.err)
	}
}

// pendingItem waits for the pending item of a tool while the CLI runs,
// and returns its call id.
func (s *agentSetup) pendingItem(t *testing.T, r *cliRun, connector, tool string) string {
	t.Helper()
	for {
		var callID string
		err := s.e.DB.Pool.QueryRow(context.Background(), `SELECT call_id FROM approvals
			WHERE connector = $1 AND tool = $2 AND status = 'pending'`, connector, tool).Scan(&callID)
		if err == nil {
			return callID
		}
		select {
		case <-r.done:
			t.Fatalf("the CLI ended without a pending %s · %s item: %v", connector, tool, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// decide makes the person's decision on the call's card in the inbox:
// approve, or reject with words.
func (s *agentSetup) decide(t *testing.T, callID, decision, words string) {
	t.Helper()
	card := cardFor(t, s.tab, s.e, callID)
	var actions []chromedp.Action[chromedp.Void]
	if words != "" {
		actions = append(actions, chromedp.SendKeys(chromedp.CSS(card+` textarea`), words))
	}
	actions = append(actions, chromedp.Click(chromedp.CSS(card+` button[value="`+decision+`"]`)))
	if err := chromedp.Do(s.tab, actions...); err != nil {
		t.Fatalf("%s in the inbox: %v", decision, err)
	}
}

// count runs a counting query.
func (s *agentSetup) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := s.e.DB.Pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// keyIn names the files under root that contain the key.
func keyIn(t *testing.T, root, key string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(key)) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
