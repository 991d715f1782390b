package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/internal/testenv"
)

// The framework end-to-end tests run the TypeScript adapters of
// sdk/typescript (built with `npm ci && npm run build` there) with the real
// pinned framework packages, against a real Countersign, a model served by
// the test and a person deciding in Chromium.

// frameworkSetup is what every framework scenario shares.
type frameworkSetup struct {
	e     *testenv.Env
	key   string
	node  string
	dir   string // sdk/typescript
	model *scriptedModel
	tab   context.Context
}

// TestFrameworkAdapters runs every framework's scenarios on one
// Countersign, one model and one signed-in person.
func TestFrameworkAdapters(t *testing.T) {
	s := newFrameworkSetup(t)
	t.Run("OpenAIAgents", func(t *testing.T) { openAIAgentsScenarios(t, s) })
	t.Run("AISDK", func(t *testing.T) { s.approvalScenarios(t, "ai-sdk.mjs", "aisdk") })
	t.Run("LangGraph", func(t *testing.T) {
		// The checkpoints live in a database of their own, as a program's would.
		s.approvalScenarios(t, "langgraph.mjs", "langgraph", "CHECKPOINT_DATABASE_URL="+testenv.NewDatabase(t))
	})
}

func newFrameworkSetup(t *testing.T) *frameworkSetup {
	t.Helper()
	node, err := exec.LookPath("node")
	dir, _ := filepath.Abs("../sdk/typescript")
	if err == nil {
		for _, p := range []string{"node_modules/@openai/agents", "dist/openai-agents.js", "dist/ai-sdk.js", "dist/langgraph.js"} {
			if _, err = os.Stat(filepath.Join(dir, p)); err != nil {
				break
			}
		}
	}
	if err != nil {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			t.Fatalf("the framework end-to-end tests need node and `npm ci && npm run build` in sdk/typescript: %v", err)
		}
		t.Skipf("node or the built sdk/typescript missing (%v); run `npm ci && npm run build` there", err)
	}
	s := &frameworkSetup{node: node, dir: dir, model: newScriptedModel(t)}
	s.e = testenv.NewEnv(t)
	s.key = s.e.APIKey()
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(cancelTimeout)
	s.tab = ctx
	signIn(t, ctx, s.e, "member")
	return s
}

// nodeRun is one run of a framework script.
type nodeRun struct {
	out  strings.Builder
	done chan struct{}
	err  error
}

// start runs script (under sdk/typescript/e2e) with the scenario and env
// added to what it needs to reach Countersign and the model.
func (s *frameworkSetup) start(t *testing.T, script, scenario string, env ...string) *nodeRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	cmd := exec.CommandContext(ctx, s.node, filepath.Join("e2e", script), scenario)
	cmd.Dir = s.dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "COUNTERSIGN_URL=" + s.e.BaseURL, "COUNTERSIGN_API_KEY=" + s.key,
		"MODEL_URL=" + s.model.URL, "OPENAI_AGENTS_DISABLE_TRACING=1"}, env...)
	r := &nodeRun{done: make(chan struct{})}
	w := &lockedBuilder{b: &r.out}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		r.err = cmd.Wait()
		cancel()
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
		if t.Failed() {
			t.Logf("%s %s: %v\n%s", script, scenario, r.err, r.out.String())
		}
	})
	return r
}

// finish waits for the run and fails the test unless it exited 0; it
// returns the script's "name value" lines.
func (r *nodeRun) finish(t *testing.T) map[string]string {
	t.Helper()
	<-r.done
	if r.err != nil {
		t.Fatalf("the script ended with %v:\n%s", r.err, r.out.String())
	}
	said := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(r.out.String()))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok {
			said[k] = v
		}
	}
	return said
}

// decide makes the person's decision on the call's card in the inbox.
func (s *frameworkSetup) decide(t *testing.T, callID, decision, words string) {
	t.Helper()
	card := cardFor(t, s.tab, s.e, callID)
	var actions []chromedp.Action[chromedp.Void]
	if words != "" {
		// Set as a paste would: chromedp's key events cannot type the
		// invisible characters the words carry.
		actions = append(actions, chromedp.SetValue(chromedp.CSS(card+` textarea`), words))
	}
	actions = append(actions, chromedp.Click(chromedp.CSS(card+` button[value="`+decision+`"]`)))
	if err := chromedp.Do(s.tab, actions...); err != nil {
		t.Fatalf("%s in the inbox: %v", decision, err)
	}
	if decision == "approve" {
		// A runtime waiting live may claim it before the next look:
		// consumed is approved, and used.
		s.waitStatus(t, callID, "approved", "consumed")
		return
	}
	s.waitStatus(t, callID, "rejected")
}

// waitStatus waits until the call's item has one of the statuses.
func (s *frameworkSetup) waitStatus(t *testing.T, callID string, statuses ...string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var got string
		_ = s.e.DB.Pool.QueryRow(context.Background(), `SELECT status FROM approvals WHERE call_id = $1`, callID).Scan(&got)
		if slices.Contains(statuses, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the item of %s is %q, not one of %q", callID, got, statuses)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// status is the call's item's status ("" when there is none).
func (s *frameworkSetup) status(t *testing.T, callID string) string {
	t.Helper()
	var got string
	_ = s.e.DB.Pool.QueryRow(context.Background(), `SELECT status FROM approvals WHERE call_id = $1`, callID).Scan(&got)
	return got
}

// approvalID is the id of the call's item.
func (s *frameworkSetup) approvalID(t *testing.T, callID string) string {
	t.Helper()
	var id string
	if err := s.e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE call_id = $1`, callID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// items counts the conversation's items.
func (s *frameworkSetup) items(t *testing.T, conversation string) int {
	t.Helper()
	var n int
	if err := s.e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM approvals WHERE conversation_id = $1`, conversation).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// effects is the tool's executions recorded in file, one JSON line each.
func effects(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// modelSaw decodes a tool output the model was sent: Countersign's answer
// for a call that did not run.
type modelSaw struct {
	Countersign string `json:"countersign"`
	Code        string `json:"code"`
	Message     string `json:"message"`
	UserWords   string `json:"user_words"`
}

func decodeSaw(t *testing.T, output string) modelSaw {
	t.Helper()
	var v modelSaw
	if err := json.Unmarshal([]byte(output), &v); err != nil || v.Countersign != "not_run" {
		t.Fatalf("the model was not told Countersign's answer: %q (%v)", output, err)
	}
	return v
}

// rejectWords are the person's words on a rejection: quotes, a non-ASCII
// character, a zero-width space and a right-to-left override, carried whole
// to the model (never cut, reordered or stripped).
const rejectWords = "Use the \"billing\" alias — not finance@,\u200b please \u202egnp.exe"

// lockedBuilder lets stdout and stderr share one builder.
type lockedBuilder struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
