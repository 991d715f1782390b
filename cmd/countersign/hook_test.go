package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
	key := strings.TrimPrefix(env[1], "COUNTERSIGN_API_KEY=")
	dir := t.TempDir()
	goodFile, openFile, wrongFile := filepath.Join(dir, "key"), filepath.Join(dir, "open"), filepath.Join(dir, "wrong")
	for p, c := range map[string]struct {
		key  string
		mode os.FileMode
	}{goodFile: {key, 0o600}, openFile: {key, 0o644}, wrongFile: {"cs_wrongkey_0a1b2c3d4e5f", 0o600}} {
		if err := os.WriteFile(p, []byte(c.key+"\n"), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	urlUser := []string{"COUNTERSIGN_URL=" + e.BaseURL, "COUNTERSIGN_API_KEY=", "COUNTERSIGN_API_KEY_FILE=", "COUNTERSIGN_USER=" + dev.DemoMember.Subject}
	keyFileEnv := append(append([]string{}, urlUser[:3]...), "COUNTERSIGN_API_KEY_FILE="+goodFile, urlUser[3])
	cases := []struct {
		name        string
		env         []string
		stdin       string
		args        []string
		code        int
		stdout, why string
	}{
		{"Allowed", env, hookRead + `1"}`, nil, 0, hookAllowed, ""},
		{"CodexDialect", env, `{"session_id":"s","turn_id":"t","hook_event_name":"PreToolUse","tool_name":"mcp__mail__search_messages","tool_input":{"query":"x"},"tool_use_id":"call_b1"}`,
			[]string{"--dialect", "codex"}, 0, "", ""},
		{"CodexPermissionRequestDialect", env, `{"session_id":"s","turn_id":"t","hook_event_name":"PermissionRequest","tool_name":"mcp__mail__search_messages","tool_input":{"query":"x"}}`,
			[]string{"--dialect", "codex-permission-request"}, 0, `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}` + "\n", ""},
		{"Malformed", env, `{"tool_name":`, nil, 2, "", "not a JSON object"},
		{"ServerDown", []string{"COUNTERSIGN_URL=http://127.0.0.1:1", "COUNTERSIGN_API_KEY=k", "COUNTERSIGN_USER=u"}, hookRead + `2"}`, nil, 2, "", "could not ask Countersign"},
		{"NoConfiguration", []string{"COUNTERSIGN_URL=", "COUNTERSIGN_API_KEY=", "COUNTERSIGN_USER="}, hookRead + `3"}`, nil, 2, "", "set COUNTERSIGN_URL"},
		{"KeyFile", keyFileEnv, hookRead + `6"}`, nil, 0, hookAllowed, ""},
		{"KeyFileFlag", urlUser, hookRead + `7"}`, []string{"--api-key-file", goodFile}, 0, hookAllowed, ""},
		{"KeyFileReadable", append(urlUser, "COUNTERSIGN_API_KEY_FILE="+openFile), hookRead + `8"}`, nil, 2, "", "chmod 600"},
		{"KeyFileMissing", append(urlUser, "COUNTERSIGN_API_KEY_FILE="+goodFile+".gone"), hookRead + `9"}`, nil, 2, "", "cannot open the API key file"},
		{"KeyFileServerDown", []string{"COUNTERSIGN_URL=http://127.0.0.1:1", "COUNTERSIGN_API_KEY=", "COUNTERSIGN_API_KEY_FILE=" + goodFile, "COUNTERSIGN_USER=u"}, hookRead + `10"}`, nil, 2, "", "could not ask Countersign"},
		{"KeyFileRefused", []string{"COUNTERSIGN_URL=" + e.BaseURL, "COUNTERSIGN_API_KEY=", "COUNTERSIGN_API_KEY_FILE=" + wrongFile, "COUNTERSIGN_USER=u"}, hookRead + `11"}`, nil, 2, "", "refused the API key"},
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
			if strings.Contains(stdout+stderr, key) || strings.Contains(stdout+stderr, "cs_wrongkey") {
				t.Fatalf("the output shows the API key: %q %q", stdout, stderr)
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

// countersign dev prints a ready hook entry for each agent: the hook's own
// command line, with the key file and never the key.
func TestPrintHookLines(t *testing.T) {
	var b bytes.Buffer
	printHookLines(&b, "http://localhost:8080", "/home/maya/my data/dev-api-key", "demo-member")
	var entries []hookEntry
	for _, l := range strings.Split(b.String(), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "{") {
			var e hookEntry
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			entries = append(entries, e)
		}
	}
	if len(entries) != 2 {
		t.Fatalf("want two hook entries:\n%s", b.String())
	}
	for i, dialect := range []string{"claude-code", "codex"} {
		e := entries[i]
		fields := strings.SplitN(e.Command, " ", 2)
		want := "hook --dialect " + dialect + " --url http://localhost:8080 --user demo-member --api-key-file '/home/maya/my data/dev-api-key' --wait 50s"
		// The agent's timeout is above --wait, with a margin.
		if e.Type != "command" || e.Timeout < int(hookWait/time.Second)+10 || len(fields) != 2 || fields[1] != want {
			t.Errorf("%s entry %+v, want command … %s", dialect, e, want)
		}
	}
	if strings.Contains(b.String(), "--api-key ") {
		t.Fatalf("a hook line carries --api-key:\n%s", b.String())
	}
}

// The key file: read when its mode is 0600, refused when others may read
// it, and no message ever holds its contents.
func TestRuntimeKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const secret = "cs_keyfile_5e0c9a1b7d3f2468"
	good := write("good", secret+"\n", 0o600)
	t.Setenv(envAPIKey, "")
	t.Setenv(envAPIKeyFile, "")
	if k, err := runtimeKey("", good); err != nil || k != secret {
		t.Fatalf("good file: %q %v", k, err)
	}
	t.Setenv(envAPIKeyFile, good)
	if k, err := runtimeKey("", ""); err != nil || k != secret {
		t.Fatalf("file from the environment: %q %v", k, err)
	}
	if k, err := runtimeKey("cs_flag", ""); err != nil || k != "cs_flag" {
		t.Fatalf("the flag wins: %q %v", k, err)
	}
	t.Setenv(envAPIKey, "cs_env")
	if k, err := runtimeKey("", ""); err != nil || k != "cs_env" {
		t.Fatalf("the variable: %q %v", k, err)
	}
	bad := []struct{ name, path, why string }{
		{"GroupReadable", write("group", secret, 0o640), "chmod 600"},
		{"WorldReadable", write("world", secret, 0o644), "chmod 600"},
		{"Missing", filepath.Join(dir, "nope"), "cannot open"},
		{"Empty", write("empty", "\n", 0o600), "does not hold one key"},
		{"TwoLines", write("two", secret+"\n"+secret+"\n", 0o600), "does not hold one key"},
		{"Folder", dir, "not a regular file"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			k, err := runtimeKey("", c.path)
			if err == nil || k != "" || !strings.Contains(err.Error(), c.why) || strings.Contains(err.Error(), secret) {
				t.Fatalf("%q %v; want an error with %q and without the key", k, err, c.why)
			}
		})
	}
}

// SIGTERM (or SIGINT) while the hook works — here diffing a crafted patch
// over a large file, with a server that never answers — ends it within a
// second with the agent's deny on stdout.
func TestHookSignalAnswersDeny(t *testing.T) {
	bin := buildBinary(t)
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) })
	dir := t.TempDir()
	var big strings.Builder
	for i := 0; big.Len() < 1_900_000; i++ {
		big.WriteString("line " + strings.Repeat("x", 40) + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var patch strings.Builder
	patch.WriteString("*** Begin Patch\n")
	for i := 0; i < 300; i++ {
		patch.WriteString("*** Update File: big.txt\n@@\n-line " + strings.Repeat("x", 40) + "\n+line y\n")
	}
	patch.WriteString("*** End Patch\n")
	p, _ := json.Marshal(map[string]string{"command": patch.String()})
	for _, c := range []struct {
		dialect, input string
		sig            os.Signal
	}{
		{"claude-code", `{"session_id":"s1","cwd":` + quote(dir) + `,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_sig"}`, syscall.SIGTERM},
		{"codex", `{"session_id":"s1","turn_id":"t1","cwd":` + quote(dir) + `,"hook_event_name":"PreToolUse","tool_name":"apply_patch","tool_input":` + string(p) + `,"tool_use_id":"call_sig"}`, syscall.SIGTERM},
		{"codex", `{"session_id":"s1","turn_id":"t1","cwd":` + quote(dir) + `,"hook_event_name":"PreToolUse","tool_name":"apply_patch","tool_input":` + string(p) + `,"tool_use_id":"call_sig2"}`, os.Interrupt},
	} {
		t.Run(c.dialect+"/"+c.sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "hook", "--dialect", c.dialect, "--url", srv.URL, "--user", "maya", "--wait", "60s")
			cmd.Env = append(os.Environ(), "COUNTERSIGN_API_KEY=cs_signal_test_0a1b2c3d4e5f")
			cmd.Stdin = strings.NewReader(c.input)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			sent := time.Now()
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			go func() { ended <- cmd.Wait() }()
			select {
			case <-ended:
			case <-time.After(time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("still running a second after the signal")
			}
			t.Logf("ended %v after the signal", time.Since(sent).Round(time.Millisecond))
			if cmd.ProcessState.ExitCode() != 0 || !strings.Contains(out.String(), `"permissionDecision":"deny"`) || !strings.Contains(out.String(), "stopped") {
				t.Fatalf("exit %d stdout %q stderr %q; want the deny", cmd.ProcessState.ExitCode(), out.String(), errb.String())
			}
		})
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
