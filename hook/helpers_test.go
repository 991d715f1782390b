package hook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// server is a running Countersign with the demo catalog, a runtime key and
// the demo member signed in.
type server struct {
	*testenv.Env
	key    string
	member *testenv.Browser
}

func newServer(t *testing.T, opts ...testenv.Option) *server {
	t.Helper()
	e := testenv.NewEnv(t, opts...)
	s := &server{Env: e, key: e.APIKey()}
	c := client.New(e.BaseURL, s.key)
	for name, conn := range dev.DemoCatalog {
		if err := c.SyncConnector(context.Background(), name, conn); err != nil {
			t.Fatal(err)
		}
	}
	s.member = e.NewBrowser()
	s.member.SignIn("member")
	return s
}

func (s *server) config(dialect string, wait time.Duration) hook.Config {
	return hook.Config{Client: client.New(s.BaseURL, s.key), User: dev.DemoMember.Subject, Dialect: dialect, Wait: wait}
}

type result struct {
	code           int
	stdout, stderr string
}

func runHook(cfg hook.Config, input string) result {
	var out, errb bytes.Buffer
	code := hook.Run(context.Background(), cfg, strings.NewReader(input), &out, &errb)
	return result{code, out.String(), errb.String()}
}

func runAsync(cfg hook.Config, input string) chan result {
	ch := make(chan result, 1)
	go func() { ch <- runHook(cfg, input) }()
	return ch
}

// claudeInput is a recorded Claude Code PreToolUse input.
func claudeInput(toolUseID, tool, toolInput string) string {
	return fmt.Sprintf(`{"session_id":"sess-1","transcript_path":"/home/maya/.claude/projects/p/sess-1.jsonl","cwd":"/home/maya/p",`+
		`"permission_mode":"default","hook_event_name":"PreToolUse","prompt_id":"prompt-1","tool_name":%q,"tool_input":%s,"tool_use_id":%q}`,
		tool, toolInput, toolUseID)
}

// codexPreToolUse is a Codex PreToolUse input as Codex 0.169.0 writes it.
func codexPreToolUse(toolUseID, tool, toolInput string) string {
	return fmt.Sprintf(`{"session_id":"codex-sess","turn_id":"turn-7","transcript_path":"/tmp/t.jsonl","cwd":"/home/maya/p",`+
		`"hook_event_name":"PreToolUse","model":"gpt-5","permission_mode":"default","tool_name":%q,"tool_input":%s,"tool_use_id":%q}`,
		tool, toolInput, toolUseID)
}

// codexInput is a recorded Codex PermissionRequest input.
func codexInput(tool, toolInput string) string {
	return fmt.Sprintf(`{"session_id":"codex-sess","turn_id":"turn-7","transcript_path":"/tmp/t.jsonl","cwd":"/home/maya/p",`+
		`"hook_event_name":"PermissionRequest","model":"gpt-5","permission_mode":"default","tool_name":%q,"tool_input":%s}`, tool, toolInput)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// claudeAnswer is the exact stdout of a Claude Code answer.
func claudeAnswer(decision, reason string) string {
	return `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"` + decision +
		`","permissionDecisionReason":` + jsonString(reason) + "}}\n"
}

func (r result) want(t *testing.T, code int, stdout string) {
	t.Helper()
	if r.code != code || r.stdout != stdout {
		t.Fatalf("exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q", r.code, r.stdout, r.stderr, code, stdout)
	}
	if code == hook.ExitDecided && r.stderr != "" {
		t.Fatalf("stderr on a decision: %q", r.stderr)
	}
}

// wantFailed: exit 2, nothing on stdout, one line on stderr saying why.
func (r result) wantFailed(t *testing.T, why string) {
	t.Helper()
	if r.code != hook.ExitFailed || r.stdout != "" || !strings.HasPrefix(r.stderr, "countersign hook: ") ||
		strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") || !strings.Contains(r.stderr, why) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and a line with %q", r.code, r.stdout, r.stderr, why)
	}
}

// pendingID waits until the call's item is pending and returns its id.
func (s *server) pendingID(t *testing.T, callID string) string {
	t.Helper()
	var id string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := s.DB.Pool.QueryRow(context.Background(),
			`SELECT id::text FROM approvals WHERE call_id = $1 AND status = 'pending'`, callID).Scan(&id)
		if err == nil {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("call %s never became pending: %v", callID, err)
		}
	}
}

func (s *server) decide(t *testing.T, id string, form url.Values) {
	t.Helper()
	if resp, body := s.member.PostForm("/approvals/"+id+"/decision", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("decision: %d %s", resp.StatusCode, body)
	}
}

// message is the model-facing message the server gives for an item.
func (s *server) message(t *testing.T, id string) string {
	t.Helper()
	status, body := s.API(s.key, http.MethodGet, "/api/v1/approvals/"+id, nil)
	msg, _ := body["message"].(string)
	if status != http.StatusOK || msg == "" {
		t.Fatalf("approval %s: %d %v", id, status, body)
	}
	return msg
}

func (s *server) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// shortWait is a --wait that passes before anyone answers, with room for
// the check (and a first-sight registration) on a busy machine.
const shortWait = 2 * time.Second
