package hook_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/hook"
)

// mkfifo makes a named pipe at p (no one ever writes to it).
func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
}

// runWithin runs the hook and fails the test when it has not answered
// by limit: a hook kept from answering lets the agent run the call.
func runWithin(t *testing.T, cfg hook.Config, input string, limit time.Duration) result {
	t.Helper()
	select {
	case r := <-runAsync(cfg, input):
		return r
	case <-time.After(limit):
		t.Fatalf("no answer within %v", limit)
	}
	return result{}
}

// A named pipe named by an edit: the hook never opens it, answers "does
// not run" (here: still waiting for a person) within --wait, and the card
// says why the file was not read.
func TestNamedPipeDoesNotRun(t *testing.T) {
	s := newServer(t)
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe")
	mkfifo(t, pipe)
	const wait = 2 * time.Second
	cases := []struct {
		name, dialect, callID, input string
	}{
		{"ClaudeEdit", hook.ClaudeCode, "toolu_fifo",
			strings.Replace(claudeInput("toolu_fifo", "Edit", `{"file_path":`+jsonString(pipe)+`,"old_string":"a","new_string":"b"}`), `"cwd":"/home/maya/p"`, `"cwd":`+jsonString(dir), 1)},
		{"ClaudeWrite", hook.ClaudeCode, "toolu_fifo_w",
			strings.Replace(claudeInput("toolu_fifo_w", "Write", `{"file_path":"pipe","content":"x\n"}`), `"cwd":"/home/maya/p"`, `"cwd":`+jsonString(dir), 1)},
		{"CodexPatch", hook.Codex, "call_fifo",
			strings.Replace(codexPreToolUse("call_fifo", "apply_patch", `{"command":`+jsonString("*** Begin Patch\n*** Delete File: pipe\n*** Add File: evil.sh\n+#!/bin/sh\n+echo pwned\n*** End Patch\n")+`}`), `"cwd":"/home/maya/p"`, `"cwd":`+jsonString(dir), 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runWithin(t, s.config(c.dialect, wait), c.input, wait+time.Second)
			if r.code != hook.ExitDecided || !strings.Contains(r.stdout, `"permissionDecision":"deny"`) {
				t.Fatalf("exit %d stdout %q stderr %q; want a deny", r.code, r.stdout, r.stderr)
			}
			if n := s.count(t, `SELECT count(*) FROM approvals WHERE call_id = $1 AND context_diff::text LIKE '%not a regular file%'`, c.callID); n != 1 {
				t.Fatalf("the card does not say the pipe is not a regular file")
			}
		})
	}
}

// recorder is a proxy in front of the server that keeps every request
// body it passes on.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
	URL    string
}

func newRecorder(t *testing.T, target string) *recorder {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, b)
		rec.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rec.URL = srv.URL
	return rec
}

func (rec *recorder) sent(s string) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, b := range rec.bodies {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// A Write over the hook's own key file, over ~/.ssh/id_rsa, or through a
// link to either, and over a file outside the working directory: none of
// their content reaches the server (neither on the wire nor in the
// database); the card says why, and names a link's target. A file that
// holds the key by chance has it taken out, as in every message.
func TestSecretsNeverSent(t *testing.T) {
	s := newServer(t)
	rec := newRecorder(t, s.BaseURL)
	root := t.TempDir()
	home, proj, other := filepath.Join(root, "home"), filepath.Join(root, "proj"), filepath.Join(root, "other")
	for _, d := range []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".config", "countersign"), proj, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	keyFile := writeFile(t, filepath.Join(home, "keys"), "countersign-key", s.key+"\n")
	projKey := writeFile(t, proj, "api-key", s.key+"\n") // a key file kept, wrongly, in the project
	sshKey := writeFile(t, filepath.Join(home, ".ssh"), "id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n")
	envFile := writeFile(t, proj, ".env.local", "DATABASE_PASSWORD=hunter2-sekrit\n")
	outside := writeFile(t, other, "notes.txt", "outside-the-project-text\n")
	holdsKey := writeFile(t, proj, "config.txt", "token="+s.key+"\n")
	for _, l := range [][2]string{{keyFile, "key-link"}, {sshKey, "ssh-link"}, {projKey, "proj-key-link"}} {
		if err := os.Symlink(l[0], filepath.Join(proj, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, path, secret, why, link string
		keyFile                       string
	}{
		{"KeyFile", keyFile, s.key, "the hook's own API key file", "", keyFile},
		{"KeyFileInProject", projKey, s.key, "the hook's own API key file", "", projKey},
		{"LinkToKeyFile", filepath.Join(proj, "proj-key-link"), s.key, "the hook's own API key file", projKey, projKey},
		{"LinkToKeyFileOutside", filepath.Join(proj, "key-link"), s.key, "the hook's own API key file", keyFile, keyFile},
		{"SSHKey", sshKey, "b3BlbnNzaC1rZXktdjEA", "a secret file by the hook's list", "", keyFile},
		{"LinkToSSHKey", filepath.Join(proj, "ssh-link"), "b3BlbnNzaC1rZXktdjEA", "a secret file by the hook's list", sshKey, keyFile},
		{"DotEnv", envFile, "hunter2-sekrit", "a secret file by the hook's list", "", keyFile},
		{"Outside", outside, "outside-the-project-text", "outside the working directory", "", keyFile},
	}
	wait := 3 * time.Second
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			callID := "toolu_secret_" + strconv.Itoa(i)
			in := strings.Replace(claudeInput(callID, "Write", `{"file_path":`+jsonString(c.path)+`,"content":"replaced\n"}`),
				`"cwd":"/home/maya/p"`, `"cwd":`+jsonString(proj), 1)
			cfg := hook.Config{Client: client.New(rec.URL, s.key), User: dev.DemoMember.Subject, Dialect: hook.ClaudeCode, Wait: wait,
				Files: hook.Files{KeyFile: c.keyFile}}
			r := runHook(cfg, in)
			if r.code != hook.ExitDecided || !strings.Contains(r.stdout, `"deny"`) {
				t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			if rec.sent(c.secret) {
				t.Fatalf("the file's content was sent to the server")
			}
			if n := s.count(t, `SELECT count(*) FROM approvals a WHERE a::text LIKE '%' || $1 || '%'`, c.secret); n != 0 {
				t.Fatalf("the file's content is in the database")
			}
			var diff string
			if err := s.DB.Pool.QueryRow(t.Context(), `SELECT context_diff::text FROM approvals WHERE call_id = $1`, callID).Scan(&diff); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(diff, c.why) || (c.link != "" && !strings.Contains(diff, jsonString(c.link)[1:len(jsonString(c.link))-1])) {
				t.Fatalf("the card does not say %q (link %q): %s", c.why, c.link, diff)
			}
		})
	}
	t.Run("KeyInAnOrdinaryFileIsRedacted", func(t *testing.T) {
		in := strings.Replace(claudeInput("toolu_secret_holds", "Write", `{"file_path":`+jsonString(holdsKey)+`,"content":"token=none\n"}`),
			`"cwd":"/home/maya/p"`, `"cwd":`+jsonString(proj), 1)
		cfg := hook.Config{Client: client.New(rec.URL, s.key), User: dev.DemoMember.Subject, Dialect: hook.ClaudeCode, Wait: wait}
		runHook(cfg, in)
		if rec.sent(s.key) {
			t.Fatalf("the key was sent in the diff")
		}
		if n := s.count(t, `SELECT count(*) FROM approvals WHERE call_id = 'toolu_secret_holds' AND context_diff::text LIKE '%token=[API key]%'`); n != 1 {
			t.Fatalf("the diff does not show the key redacted")
		}
	})
}

// The hook follows no redirect: a 307 to another port or host gets
// neither the key nor the call, its "allow" is not obeyed, and the reason
// names the address it pointed to.
func TestRedirectNotFollowed(t *testing.T) {
	var mu sync.Mutex
	var reached []string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached = append(reached, r.Header.Get("Authorization"))
		mu.Unlock()
		var body struct {
			CallID string `json:"call_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		_ = json.NewEncoder(w).Encode(map[string]string{"call_id": body.CallID, "decision": "allow", "via": "policy"})
	}))
	t.Cleanup(elsewhere.Close)
	for _, target := range []string{elsewhere.URL, strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)} {
		redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
		}))
		t.Cleanup(redirect.Close)
		for _, c := range []struct{ dialect, input string }{
			{hook.ClaudeCode, claudeInput("toolu_redir", "Bash", `{"command":"ls"}`)},
			{hook.Codex, codexPreToolUse("call_redir", "Bash", `{"command":"ls"}`)},
		} {
			cfg := hook.Config{Client: client.New(redirect.URL, leakKey), User: "maya", Dialect: c.dialect, Wait: 2 * time.Second}
			r := runHook(cfg, c.input)
			r.wantFailed(t, "a redirect to \""+target+"/api/v1/tool-calls\"")
			if !strings.Contains(r.stderr, "set --url") || strings.Contains(r.stderr, leakKey) {
				t.Fatalf("stderr %q", r.stderr)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reached) != 0 {
		t.Fatalf("the redirect was followed: %q", reached)
	}
}

// Deny answers the server words oddly: a blank message still gives the
// agent a deny with a reason (a reasonless deny reads as malformed, which
// lets Codex run the call), and a message that echoes the key has it
// taken out of stdout.
func TestDenyAnswers(t *testing.T) {
	deny := func(message string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				CallID string `json:"call_id"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			_ = json.NewEncoder(w).Encode(map[string]string{"call_id": body.CallID, "decision": "deny", "code": "blocked_by_policy",
				"message": strings.ReplaceAll(message, "KEY", strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))})
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	cases := []struct{ name, dialect, input, message string }{
		{"CodexBlank", hook.Codex, codexPreToolUse("call_b", "Bash", `{"command":"ls"}`), " \n\t"},
		{"CodexPermissionBlank", hook.CodexPermissionRequest, codexInput("Bash", `{"command":"ls"}`), "  "},
		{"ClaudeBlank", hook.ClaudeCode, claudeInput("toolu_b", "Bash", `{"command":"ls"}`), " "},
		{"CodexEchoesKey", hook.Codex, codexPreToolUse("call_k", "Bash", `{"command":"ls"}`), "your key KEY is blocked"},
		{"ClaudeEchoesKey", hook.ClaudeCode, claudeInput("toolu_k", "Bash", `{"command":"ls"}`), "your key KEY is blocked"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := hook.Config{Client: client.New(deny(c.message), leakKey), User: "maya", Dialect: c.dialect, Wait: 2 * time.Second}
			r := runHook(cfg, c.input)
			var out struct {
				HookSpecificOutput struct {
					PermissionDecision       string `json:"permissionDecision"`
					PermissionDecisionReason string `json:"permissionDecisionReason"`
					Decision                 struct {
						Behavior, Message string
					} `json:"decision"`
				} `json:"hookSpecificOutput"`
			}
			if r.code != hook.ExitDecided || json.Unmarshal([]byte(r.stdout), &out) != nil {
				t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			h := out.HookSpecificOutput
			decision, reason := h.PermissionDecision, h.PermissionDecisionReason
			if c.dialect == hook.CodexPermissionRequest {
				decision, reason = h.Decision.Behavior, h.Decision.Message
			}
			if decision != "deny" || strings.TrimSpace(reason) == "" {
				t.Fatalf("decision %q reason %q", decision, reason)
			}
			if strings.Contains(r.stdout, leakKey) || (strings.Contains(c.message, "KEY") && !strings.Contains(reason, "[API key]")) {
				t.Fatalf("the key is not taken out: %q", r.stdout)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// An agent that never closes the hook's stdin does not keep it from
// answering: the clock runs from the first byte.
func TestInputThatNeverEnds(t *testing.T) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	go func() { _, _ = pw.Write([]byte(`{"session_id":"s1",`)) }()
	cfg := hook.Config{Client: client.New("http://127.0.0.1:1", leakKey), User: "maya", Dialect: hook.Codex, Wait: time.Second}
	ch := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := hook.Run(t.Context(), cfg, pr, &out, &errb)
		ch <- result{code, out.String(), errb.String()}
	}()
	select {
	case r := <-ch:
		r.wantFailed(t, "did not finish within --wait (1s)")
	case <-time.After(3 * time.Second):
		t.Fatal("no answer while the input never ends")
	}
}

// The key is taken out before a long message is cut: cut first, the
// key's head would be left whole enough to read.
func TestRedactBeforeCut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		msg := strings.Repeat("x", 447) + " " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + " and more"
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "x", "message": msg}})
	}))
	t.Cleanup(srv.Close)
	cfg := hook.Config{Client: client.New(srv.URL, leakKey), User: "maya", Dialect: hook.ClaudeCode, Wait: 2 * time.Second}
	r := runHook(cfg, claudeInput("toolu_cut", "Bash", `{"command":"ls"}`))
	r.wantFailed(t, "Countersign answered 500")
	if strings.Contains(r.stderr, "cs_hookleak") || strings.Contains(r.stderr, "8b1d2e6f") {
		t.Fatalf("part of the key is shown: %q", r.stderr)
	}
}
