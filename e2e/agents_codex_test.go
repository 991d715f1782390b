package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// codexRun is one `codex exec` run: its CODEX_HOME, workspace and fake
// model.
type codexRun struct {
	home, work string
	model      *fakeModel
	*cliRun
}

// codexTrustHash is the hash Codex 0.169.0 keeps as a hook's
// hooks.state.<key>.trusted_hash once a person has trusted it (/hooks):
// SHA-256 of the hook's normalised declaration as compact JSON with sorted
// keys. Codex runs a hook that is not managed only when the hash of its
// current declaration matches.
func codexTrustHash(t *testing.T, event, command string, timeout int) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // serde_json does not escape <, >, &
	// encoding/json writes map keys sorted.
	err := enc.Encode(map[string]any{"event_name": event, "hooks": []any{map[string]any{
		"async": false, "command": command, "timeout": timeout, "type": "command"}}})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// startCodex runs plain `codex exec` (approval "never") with the
// workspace-write sandbox in a fresh CODEX_HOME and workspace, against a
// fake model with the script, with the PreToolUse hook `countersign dev`
// prints in hooks.json, trusted through the hooks.state record Codex keeps
// for a trusted hook in config.toml — or, with trusted set to another
// command, trusted for that command only.
func (s *agentSetup) startCodex(t *testing.T, countersignURL, trusted string, script ...toolCall) *codexRun {
	t.Helper()
	c := &codexRun{home: t.TempDir(), work: t.TempDir()}
	if s.prepareWork != nil {
		s.prepareWork(t, c.work)
	}
	c.model = newFakeModel(t, openAIResponses, script...)
	command := s.hookCommand("codex", countersignURL)
	if trusted == "" {
		trusted = command
	}
	hooks, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
		"hooks": []any{map[string]any{"type": "command", "command": command, "timeout": 60}},
	}}}})
	hooksFile := filepath.Join(c.home, "hooks.json")
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
		`[hooks.state."` + hooksFile + `:pre_tool_use:0:0"]`,
		`trusted_hash = "` + codexTrustHash(t, "pre_tool_use", trusted, 60) + `"`,
		``,
	}, "\n")
	for name, data := range map[string][]byte{hooksFile: hooks, filepath.Join(c.home, "config.toml"): []byte(config)} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var pixel bytes.Buffer
	if err := png.Encode(&pixel, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.work, "pixel.png"), pixel.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + c.home, "CODEX_HOME=" + c.home, "FAKE_MODEL_API_KEY=sk-fake-model-key"}
	c.cliRun = s.startCLI(t, c.work, env, "codex", "exec", "--skip-git-repo-check", "--sandbox", "workspace-write",
		"Follow the plan.")
	return c
}

// toolOutput is the output of the step'th call as the model was shown it.
func (c *codexRun) toolOutput(t *testing.T, step int) string {
	t.Helper()
	id := c.model.callID(step)
	for _, r := range c.model.requests() {
		var req struct {
			Input []struct {
				Type   string          `json:"type"`
				CallID string          `json:"call_id"`
				Output json.RawMessage `json:"output"`
			} `json:"input"`
		}
		if json.Unmarshal([]byte(r.Body), &req) != nil {
			continue
		}
		for _, item := range req.Input {
			if strings.HasSuffix(item.Type, "_output") && item.CallID == id {
				var text string
				if json.Unmarshal(item.Output, &text) == nil {
					return text
				}
				return string(item.Output)
			}
		}
	}
	t.Fatalf("the model was never shown the output of call %d; it received:\n%s", step, c.model.received())
	return ""
}

// codexScenarios: Codex's PreToolUse hook under plain `codex exec`.
func codexScenarios(t *testing.T, s *agentSetup) {
	t.Run("ReadOnlyRunsWithoutAsking", func(t *testing.T) {
		c := s.startCodex(t, s.e.BaseURL, "", toolCall{"view_image", `{"path":"pixel.png"}`})
		c.wait(t)
		got := c.toolOutput(t, 0)
		t.Logf("tool output: %.300s", got)
		if strings.Contains(got, "blocked") || !strings.Contains(got, "data:image/png;base64,") {
			t.Fatalf("view_image did not run: %s", got)
		}
		if n := s.count(t, `SELECT count(*) FROM approvals WHERE connector = 'codex'`); n != 0 {
			t.Fatalf("the read-only call asked a person (%d items)", n)
		}
		if n := s.count(t, `SELECT count(*) FROM audit_events WHERE action = 'tool registered' AND connector = 'codex' AND tool = 'view_image'`); n != 1 {
			t.Fatalf("view_image was registered %d times", n)
		}
	})

	// Plain `codex exec` asks nothing itself: the ordinary in-workspace
	// command reaches Countersign through PreToolUse.
	t.Run("ApprovedCommandRunsOnce", func(t *testing.T) {
		c := s.startCodex(t, s.e.BaseURL, "", toolCall{"exec_command", `{"cmd":"echo approved >> out.txt"}`})
		callID := s.pendingItem(t, c.cliRun, "codex", "Bash")
		if _, err := os.Stat(filepath.Join(c.work, "out.txt")); err == nil {
			t.Fatal("the command ran before the person approved")
		}
		s.decide(t, callID, "approve", "")
		c.wait(t)
		if b, err := os.ReadFile(filepath.Join(c.work, "out.txt")); err != nil || string(b) != "approved\n" {
			t.Fatalf("out.txt: %q %v", b, err)
		}
		got := c.toolOutput(t, 0)
		t.Logf("tool output: %s", got)
		if !strings.Contains(got, "exited with code 0") {
			t.Fatalf("the approved command's output: %s", got)
		}
		if n := s.count(t, `SELECT count(*) FROM approvals WHERE call_id = $1 AND status = 'consumed'`, callID); n != 1 {
			t.Fatalf("%d consumed items for the call", n)
		}
	})

	t.Run("RejectedCommandDoesNotRun", func(t *testing.T) {
		c := s.startCodex(t, s.e.BaseURL, "", toolCall{"exec_command", `{"cmd":"echo rejected >> out.txt"}`})
		callID := s.pendingItem(t, c.cliRun, "codex", "Bash")
		s.decide(t, callID, "reject", "Not on a Friday afternoon")
		c.wait(t)
		if _, err := os.Stat(filepath.Join(c.work, "out.txt")); err == nil {
			t.Fatal("the rejected command ran")
		}
		got := c.toolOutput(t, 0)
		t.Logf("tool output: %s", got)
		if !strings.Contains(got, "blocked by PreToolUse hook") || !strings.Contains(got, "Not on a Friday afternoon") {
			t.Fatalf("the model was not told the person's words: %s", got)
		}
	})

	// A patch that deletes a named pipe beside adding a script: the hook
	// does not hang on the pipe, asks with a card that says the pipe was not
	// read, and nothing of the patch runs without the person.
	t.Run("NamedPipeRunsNothing", func(t *testing.T) {
		s.prepareWork = func(t *testing.T, dir string) { mkfifoIn(t, dir, "pipe") }
		defer func() { s.prepareWork = nil }()
		c := s.startCodex(t, s.e.BaseURL, "",
			toolCall{"apply_patch", "*** Begin Patch\n*** Delete File: pipe\n*** Add File: evil.sh\n+echo pwned\n*** End Patch\n"})
		callID := s.pendingItem(t, c.cliRun, "codex", "apply_patch")
		if n := s.count(t, `SELECT count(*) FROM approvals WHERE call_id = $1 AND context_diff::text LIKE '%not a regular file%'`, callID); n != 1 {
			t.Fatal("the card does not say the pipe was not read")
		}
		s.decide(t, callID, "reject", "No pipes")
		c.wait(t)
		if _, err := os.Stat(filepath.Join(c.work, "evil.sh")); err == nil {
			t.Fatal("evil.sh was written")
		}
		stillAPipe(t, c.work, "pipe")
	})

	t.Run("UnreachableRunsNothingAndKeepsTheKey", func(t *testing.T) {
		c := s.startCodex(t, s.closed, "",
			toolCall{"exec_command", `{"cmd":"echo ran >> out.txt"}`},
			toolCall{"apply_patch", "*** Begin Patch\n*** Add File: patched.txt\n+patched\n*** End Patch\n"})
		c.wait(t)
		for _, name := range []string{"out.txt", "patched.txt"} {
			if _, err := os.Stat(filepath.Join(c.work, name)); err == nil {
				t.Fatalf("%s was written without Countersign", name)
			}
		}
		for step := range 2 {
			got := c.toolOutput(t, step)
			t.Logf("tool output %d: %s", step, got)
			if !strings.Contains(got, "blocked by PreToolUse hook") || !strings.Contains(got, "did not run") {
				t.Fatalf("call %d: %s", step, got)
			}
		}
		if strings.Contains(c.model.received(), s.key) {
			t.Fatal("the model received the API key")
		}
		transcripts, _ := filepath.Glob(filepath.Join(c.home, "sessions", "*", "*", "*", "rollout-*.jsonl"))
		if len(transcripts) == 0 || len(keyIn(t, c.home, "could not ask Countersign")) == 0 {
			t.Fatalf("no transcript with the hook's failure under CODEX_HOME (%v)", transcripts)
		}
		for _, root := range []string{c.home, c.work} {
			if files := keyIn(t, root, s.key); len(files) > 0 {
				t.Fatalf("the API key is in %v", files)
			}
		}
	})

	// Codex runs a hook that is not managed only while its declaration is
	// the one a person trusted: after any change to the command, Codex
	// skips it — silently, and the command runs without Countersign. This
	// pins the behaviour docs/agents.md warns about.
	t.Run("ChangedHookIsSkippedByCodex", func(t *testing.T) {
		before := s.count(t, `SELECT count(*) FROM approvals`)
		c := s.startCodex(t, s.e.BaseURL, s.hookCommand("codex", s.closed),
			toolCall{"exec_command", `{"cmd":"echo unguarded >> out.txt"}`})
		c.wait(t)
		if b, err := os.ReadFile(filepath.Join(c.work, "out.txt")); err != nil || string(b) != "unguarded\n" {
			t.Fatalf("Codex ran the changed hook, or not the command: out.txt %q %v", b, err)
		}
		if n := s.count(t, `SELECT count(*) FROM approvals`); n != before {
			t.Fatalf("the skipped hook asked Countersign (%d new items)", n-before)
		}
	})
}
