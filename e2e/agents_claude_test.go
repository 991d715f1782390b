package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// claudeRun is one headless Claude Code run: its home, workspace and fake
// model.
type claudeRun struct {
	home, work string
	model      *fakeModel
	*cliRun
}

// startClaude runs `claude -p` in a fresh HOME and workspace against a fake
// model with the script and the hook in a --settings file.
func (s *agentSetup) startClaude(t *testing.T, countersignURL string, script ...toolCall) *claudeRun {
	t.Helper()
	c := &claudeRun{home: t.TempDir(), work: t.TempDir()}
	if s.prepareWork != nil {
		s.prepareWork(t, c.work)
	}
	c.model = newFakeModel(t, anthropicMessages, script...)
	settings := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
		"matcher": "*",
		"hooks":   []any{map[string]any{"type": "command", "command": s.hookCommand("claude-code", countersignURL), "timeout": 60}},
	}}}}
	b, _ := json.Marshal(settings)
	file := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.work, "notes.txt"), []byte("hello from the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HOME=" + c.home,
		"ANTHROPIC_BASE_URL=" + c.model.URL,
		"ANTHROPIC_API_KEY=sk-ant-fake-model-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
	c.cliRun = s.startCLI(t, c.work, env, "claude", "-p", "Follow the plan.", "--settings", file,
		"--output-format", "json")
	return c
}

// toolResult is the content of the tool result the model was shown for
// the step'th call, and whether it was an error.
func (c *claudeRun) toolResult(t *testing.T, step int) (string, bool) {
	t.Helper()
	id := "toolu_" + c.model.callID(step)
	for _, r := range c.model.requests() {
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal([]byte(r.Body), &req) != nil {
			continue
		}
		for _, m := range req.Messages {
			var blocks []struct {
				Type      string          `json:"type"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
				IsError   bool            `json:"is_error"`
			}
			_ = json.Unmarshal(m.Content, &blocks)
			for _, b := range blocks {
				if b.Type == "tool_result" && b.ToolUseID == id {
					return string(b.Content), b.IsError
				}
			}
		}
	}
	t.Fatalf("the model was never shown a result for call %d; it received:\n%s", step, c.model.received())
	return "", false
}

// claudeCodeScenarios: Claude Code's PreToolUse hook in `claude -p` runs.
func claudeCodeScenarios(t *testing.T, s *agentSetup) {
	t.Run("ReadRunsWithoutAsking", func(t *testing.T) {
		c := s.startClaude(t, s.e.BaseURL, toolCall{"Read", `{"file_path":"notes.txt"}`})
		c.wait(t)
		got, isErr := c.toolResult(t, 0)
		t.Logf("tool result: %s", got)
		if isErr || !strings.Contains(got, "hello from the workspace") {
			t.Fatalf("Read result %q (error %v)", got, isErr)
		}
		if n := s.count(t, `SELECT count(*) FROM approvals WHERE tool = 'Read'`); n != 0 {
			t.Fatalf("the read asked a person (%d items)", n)
		}
		// It did ask Countersign: the hook registered the tool.
		if n := s.count(t, `SELECT count(*) FROM audit_events WHERE action = 'tool registered' AND connector = 'claude-code' AND tool = 'Read'`); n != 1 {
			t.Fatalf("Read was registered %d times", n)
		}
	})

	t.Run("ApprovedCommandRunsOnce", func(t *testing.T) {
		c := s.startClaude(t, s.e.BaseURL,
			toolCall{"Bash", `{"command":"echo approved >> out.txt","description":"Write the marker"}`})
		callID := s.pendingItem(t, c.cliRun, "claude-code", "Bash")
		if _, err := os.Stat(filepath.Join(c.work, "out.txt")); err == nil {
			t.Fatal("the command ran before the person approved")
		}
		s.decide(t, callID, "approve", "")
		c.wait(t)
		if b, err := os.ReadFile(filepath.Join(c.work, "out.txt")); err != nil || string(b) != "approved\n" {
			t.Fatalf("out.txt: %q %v", b, err)
		}
		got, isErr := c.toolResult(t, 0)
		t.Logf("tool result: %s", got)
		if isErr {
			t.Fatalf("the approved command's result is an error: %s", got)
		}
		if n := s.count(t, `SELECT count(*) FROM approvals WHERE call_id = $1 AND status = 'consumed'`, callID); n != 1 {
			t.Fatalf("%d consumed items for the call", n)
		}
	})

	t.Run("RejectedCommandDoesNotRun", func(t *testing.T) {
		c := s.startClaude(t, s.e.BaseURL,
			toolCall{"Bash", `{"command":"echo rejected >> out.txt","description":"Write the marker"}`})
		callID := s.pendingItem(t, c.cliRun, "claude-code", "Bash")
		s.decide(t, callID, "reject", "Not on a Friday afternoon")
		c.wait(t)
		if _, err := os.Stat(filepath.Join(c.work, "out.txt")); err == nil {
			t.Fatal("the rejected command ran")
		}
		got, isErr := c.toolResult(t, 0)
		t.Logf("tool result: %s", got)
		if !isErr || !strings.Contains(got, "Not on a Friday afternoon") {
			t.Fatalf("the model was not told the person's words: %s (error %v)", got, isErr)
		}
	})

	// An Edit and a Write of a named pipe: nothing blocks and nothing runs
	// (Claude Code may refuse the pipe itself; if the hook is asked, its card
	// says the pipe was not read and the person rejects).
	t.Run("NamedPipeRunsNothing", func(t *testing.T) {
		s.prepareWork = func(t *testing.T, dir string) { mkfifoIn(t, dir, "pipe") }
		defer func() { s.prepareWork = nil }()
		c := s.startClaude(t, s.e.BaseURL,
			toolCall{"Edit", `{"file_path":"pipe","old_string":"a","new_string":"b"}`},
			toolCall{"Write", `{"file_path":"pipe","content":"pwned\n"}`})
		for _, tool := range []string{"Edit", "Write"} {
			if callID := s.pendingOrDone(t, c.cliRun, "claude-code", tool); callID != "" {
				if n := s.count(t, `SELECT count(*) FROM approvals WHERE call_id = $1 AND context_diff::text LIKE '%not a regular file%'`, callID); n != 1 {
					t.Fatal("the card does not say the pipe was not read")
				}
				s.decide(t, callID, "reject", "No pipes")
			}
		}
		c.wait(t)
		stillAPipe(t, c.work, "pipe")
		for step := range 2 {
			got, isErr := c.toolResult(t, step)
			t.Logf("tool result %d: %s", step, got)
			if !isErr {
				t.Fatalf("call %d ran: %s", step, got)
			}
		}
	})

	// Edits Claude Code applies loosely — straight quotes in old_string
	// over a file with curly ones, a CRLF file — show on the card exactly
	// the lines that land.
	t.Run("CardShowsWhatLands", func(t *testing.T) {
		files := map[string]string{
			"quotes.py": "print(\u201chello\u201d)\nx = \u2018a\u2019\n",
			"crlf.txt":  "one\r\ntwo\r\nthree\r\n",
		}
		s.prepareWork = func(t *testing.T, dir string) {
			for name, text := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		defer func() { s.prepareWork = nil }()
		c := s.startClaude(t, s.e.BaseURL,
			toolCall{"Read", `{"file_path":"quotes.py"}`},
			toolCall{"Edit", `{"file_path":"quotes.py","old_string":"print(\"hello\")","new_string":"print(\"bye\")"}`},
			toolCall{"Read", `{"file_path":"crlf.txt"}`},
			toolCall{"Edit", `{"file_path":"crlf.txt","old_string":"two\n","new_string":"2\nextra\n"}`})
		wants := map[string]string{
			"quotes.py": "print(\u201cbye\u201d)\nx = \u2018a\u2019\n",
			"crlf.txt":  "one\r\n2\r\nextra\r\nthree\r\n",
		}
		for range 2 {
			callID := s.pendingItem(t, c.cliRun, "claude-code", "Edit")
			var diff string
			if err := s.e.DB.Pool.QueryRow(context.Background(), `SELECT context_diff::text FROM approvals WHERE call_id = $1`, callID).Scan(&diff); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(diff, "not_applied") || strings.Contains(diff, `"unread"`) {
				t.Fatalf("the card says the edit was not read or does not apply: %s", diff)
			}
			t.Logf("card: %s", diff)
			s.decide(t, callID, "approve", "")
			for deadline := time.Now().Add(30 * time.Second); s.count(t, `SELECT count(*) FROM approvals WHERE call_id = $1 AND status = 'pending'`, callID) != 0; {
				if time.Now().After(deadline) {
					t.Fatal("the item stayed pending")
				}
				time.Sleep(50 * time.Millisecond)
			}
			var card struct {
				Files []struct {
					NewPath string `json:"new_path"`
					Hunks   []struct {
						Lines []struct{ K, T string } `json:"lines"`
					} `json:"hunks"`
				} `json:"files"`
			}
			if err := json.Unmarshal([]byte(diff), &card); err != nil || len(card.Files) != 1 {
				t.Fatalf("card %s: %v", diff, err)
			}
			name := filepath.Base(card.Files[0].NewPath)
			var added []string
			for _, h := range card.Files[0].Hunks {
				for _, l := range h.Lines {
					if l.K == "add" {
						added = append(added, l.T)
					}
				}
			}
			t.Logf("%s: the card adds %q", name, added)
			wantAdded := map[string]string{"quotes.py": "print(\u201cbye\u201d)", "crlf.txt": "2|extra"}[name]
			if strings.Join(added, "|") != wantAdded {
				t.Fatalf("%s: the card adds %q, want %q", name, added, wantAdded)
			}
		}
		c.wait(t)
		for name, want := range wants {
			if b, err := os.ReadFile(filepath.Join(c.work, name)); err != nil || string(b) != want {
				t.Errorf("%s landed as %q, want %q (%v)", name, b, want, err)
			}
		}
	})

	// Issue 41: the file changes while the card waits. The approved edit
	// does not run on the new file; a new card shows the new diff, and the
	// audit shows the drift by the files' hashes.
	t.Run("FileChangedWhileTheCardWaits", func(t *testing.T) {
		before, after := "alpha\nbeta\n", "alpha\nbeta\ngamma: written while the card waited\n"
		s.prepareWork = func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "drift.txt"), []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		defer func() { s.prepareWork = nil }()
		c := s.startClaude(t, s.e.BaseURL,
			toolCall{"Read", `{"file_path":"drift.txt"}`},
			toolCall{"Edit", `{"file_path":"drift.txt","old_string":"beta","new_string":"BETA"}`})
		callID := s.pendingItem(t, c.cliRun, "claude-code", "Edit")
		if err := os.WriteFile(filepath.Join(c.work, "drift.txt"), []byte(after), 0o644); err != nil {
			t.Fatal(err)
		}
		s.decide(t, callID, "approve", "")
		again := callID + "-changed"
		for deadline := time.Now().Add(60 * time.Second); s.count(t, `SELECT count(*) FROM approvals WHERE call_id = $1 AND status = 'pending'`, again) != 1; {
			if time.Now().After(deadline) {
				t.Fatal("no new card after the file changed")
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.wait(t)
		if b, err := os.ReadFile(filepath.Join(c.work, "drift.txt")); err != nil || string(b) != after {
			t.Fatalf("drift.txt is %q, want it as changed and not edited (%v)", b, err)
		}
		got, isErr := c.toolResult(t, 1)
		t.Logf("Edit result: %s", got)
		if !isErr || !strings.Contains(got, "changed after you approved") {
			t.Fatalf("the Edit's result %s (error %v)", got, isErr)
		}
		var diff, reason string
		if err := s.e.DB.Pool.QueryRow(context.Background(), `SELECT context_diff::text, agent_reason FROM approvals WHERE call_id = $1`, again).Scan(&diff, &reason); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(diff, "gamma: written while the card waited") || !strings.Contains(diff, sha256Hex(after)) {
			t.Fatalf("the new card does not show the file as it is now: %s", diff)
		}
		if !strings.Contains(reason, "changed after the first approval") || !strings.Contains(reason, sha256Hex(before)[:12]) ||
			!strings.Contains(reason, sha256Hex(after)[:12]) {
			t.Fatalf("the new card's reason %q", reason)
		}
		// Activity: the first item claimed with the old hash, the new one
		// requested with the new hash.
		if n := s.count(t, `SELECT count(*) FROM audit_events e JOIN approvals a ON a.id::text = e.approval_id::text
			WHERE a.call_id = $1 AND e.action = 'claimed' AND e.detail->'pre_images' = to_jsonb(ARRAY[$2::text])`, callID, sha256Hex(before)); n != 1 {
			t.Fatal("the first item's claim line does not carry the old hash")
		}
		if n := s.count(t, `SELECT count(*) FROM audit_events e JOIN approvals a ON a.id::text = e.approval_id::text
			WHERE a.call_id = $1 AND e.action = 'approval requested' AND e.detail->'pre_images' = to_jsonb(ARRAY[$2::text])`, again, sha256Hex(after)); n != 1 {
			t.Fatal("the new item's request line does not carry the new hash")
		}
		s.decide(t, again, "reject", "not now")
	})

	t.Run("UnreachableRunsNothingAndKeepsTheKey", func(t *testing.T) {
		c := s.startClaude(t, s.closed,
			toolCall{"Bash", `{"command":"echo ran >> out.txt","description":"Write the marker"}`},
			toolCall{"Read", `{"file_path":"notes.txt"}`})
		c.wait(t)
		if _, err := os.Stat(filepath.Join(c.work, "out.txt")); err == nil {
			t.Fatal("the command ran without Countersign")
		}
		got, isErr := c.toolResult(t, 0)
		t.Logf("tool result: %s", got)
		// Claude Code shows the model the hook's command line: the key
		// file's name is there, the key is not.
		if !isErr || !strings.Contains(got, "did not run") || !strings.Contains(got, s.keyFile) {
			t.Fatalf("Bash result %s (error %v)", got, isErr)
		}
		if got, isErr := c.toolResult(t, 1); !isErr || strings.Contains(got, "hello from the workspace") {
			t.Fatalf("the read ran without Countersign: %s", got)
		}
		if strings.Contains(c.model.received(), s.key) {
			t.Fatal("the model received the API key")
		}
		// The session transcript is under HOME: it has the hook's failure,
		// and no key.
		transcripts, _ := filepath.Glob(filepath.Join(c.home, ".claude", "projects", "*", "*.jsonl"))
		if len(transcripts) == 0 || len(keyIn(t, c.home, "could not ask Countersign")) == 0 {
			t.Fatalf("no transcript with the hook's failure under HOME (%v)", transcripts)
		}
		if files := keyIn(t, c.home, s.key); len(files) > 0 {
			t.Fatalf("the API key is in %v", files)
		}
		if files := keyIn(t, c.work, s.key); len(files) > 0 {
			t.Fatalf("the API key is in %v", files)
		}
	})
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
