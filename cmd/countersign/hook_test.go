package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

const (
	hookRead    = `{"session_id":"s1","hook_event_name":"PreToolUse","prompt_id":"p1","tool_name":"Read","tool_input":{"file_path":"/p/README.md"},"tool_use_id":"toolu_`
	hookAllowed = `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"Allowed by Countersign (policy)."}}` + "\n"
)

// hookServer is a running server with the demo member signed in, and the
// hook's environment for it.
func hookServer(t testing.TB) (*testenv.Env, []string) {
	e := testenv.NewEnv(t)
	key := e.APIKey()
	c := client.New(e.BaseURL, key)
	for name, conn := range dev.DemoCatalog {
		if err := c.SyncConnector(context.Background(), name, conn); err != nil {
			t.Fatal(err)
		}
	}
	e.NewBrowser().SignIn("member")
	return e, []string{"COUNTERSIGN_URL=" + e.BaseURL, "COUNTERSIGN_API_KEY=" + key, "COUNTERSIGN_USER=" + dev.DemoMember.Subject}
}

// buildBinary builds countersign as a coding agent would run it.
func buildBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "countersign")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func execHook(t testing.TB, bin string, env []string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"hook"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// The real process's exit codes: 0 only with a decision on stdout, 2 with
// one line on stderr otherwise (1 would let Claude Code run the call).
func TestHookBinary(t *testing.T) {
	e, env := hookServer(t)
	bin := buildBinary(t)
	cases := []struct {
		name        string
		env         []string
		stdin       string
		args        []string
		code        int
		stdout, why string
	}{
		{"Allowed", env, hookRead + `1"}`, nil, 0, hookAllowed, ""},
		{"CodexDialect", env, `{"session_id":"s","turn_id":"t","hook_event_name":"PermissionRequest","tool_name":"mcp__mail__search_messages","tool_input":{"query":"x"}}`,
			[]string{"--dialect", "codex"}, 0, `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}` + "\n", ""},
		{"Malformed", env, `{"tool_name":`, nil, 2, "", "not a JSON object"},
		{"ServerDown", []string{"COUNTERSIGN_URL=http://127.0.0.1:1", "COUNTERSIGN_API_KEY=k", "COUNTERSIGN_USER=u"}, hookRead + `2"}`, nil, 2, "", "could not ask Countersign"},
		{"NoConfiguration", []string{"COUNTERSIGN_URL=", "COUNTERSIGN_API_KEY=", "COUNTERSIGN_USER="}, hookRead + `3"}`, nil, 2, "", "set --url"},
		{"FlagsOverride", []string{"COUNTERSIGN_URL=http://127.0.0.1:1", "COUNTERSIGN_API_KEY=k", "COUNTERSIGN_USER=u"}, hookRead + `4"}`,
			[]string{"--url", e.BaseURL, "--api-key", strings.TrimPrefix(env[1], "COUNTERSIGN_API_KEY="), "--user", dev.DemoMember.Subject}, 0, hookAllowed, ""},
		{"UnknownDialect", env, hookRead + `5"}`, []string{"--dialect", "cursor"}, 2, "", "unknown dialect"},
		// Even help: an agent must not read exit 0 without a decision.
		{"Help", env, "", []string{"--help"}, 2, "", "bad flags"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := execHook(t, bin, c.env, c.stdin, c.args...)
			if code != c.code || stdout != c.stdout {
				t.Fatalf("exit %d stdout %q stderr %q; want exit %d stdout %q", code, stdout, stderr, c.code, c.stdout)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			if c.code == 2 && (!strings.HasPrefix(last, "countersign hook: ") || !strings.Contains(last, c.why)) {
				t.Fatalf("stderr %q, want a last line with %q", stderr, c.why)
			}
			if strings.Contains(stderr, "cs_") {
				t.Fatalf("stderr shows the API key: %q", stderr)
			}
		})
	}
}

// BenchmarkHookAllowed: hook start to answer for an allowed read-only
// call, process start included, against the same-run baseline of the same
// binary printing its version.
func BenchmarkHookAllowed(b *testing.B) {
	_, env := hookServer(b)
	bin := buildBinary(b)
	if code, out, errb := execHook(b, bin, env, hookRead+`prime"}`); code != 0 || out != hookAllowed {
		b.Fatalf("exit %d %q %q", code, out, errb)
	}
	var hook, version time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if code, out, errb := execHook(b, bin, env, hookRead+"b"+time.Now().Format("150405.000000000")+`"}`); code != 0 || out != hookAllowed {
			b.Fatalf("exit %d %q %q", code, out, errb)
		}
		hook += time.Since(start)
		start = time.Now()
		if err := exec.Command(bin, "version").Run(); err != nil {
			b.Fatal(err)
		}
		version += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(hook.Microseconds())/1000/n, "hook-ms")
	b.ReportMetric(float64(version.Microseconds())/1000/n, "version-ms")
	b.ReportMetric(float64(hook)/float64(version), "hook/version")
}

// countersign dev prints a hook line that is the hook's own command line.
func TestPrintHookLine(t *testing.T) {
	var b bytes.Buffer
	printHookLine(&b, "http://localhost:8080", "cs_key", "demo-member")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	fields := strings.Fields(lines[len(lines)-1])
	want := []string{"hook", "--url", "http://localhost:8080", "--api-key", "cs_key", "--user", "demo-member"}
	if len(fields) != len(want)+1 || strings.Join(fields[1:], " ") != strings.Join(want, " ") {
		t.Fatalf("hook line %q", lines[len(lines)-1])
	}
}
