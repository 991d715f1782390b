package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// runHookBinary runs `countersign hook` as a coding agent would, with a
// short wait: the item stays pending for the browser to show.
func runHookBinary(t *testing.T, bin string, env []string, input map[string]any, args ...string) string {
	t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"hook", "--wait", "1s"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(b)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("hook: %v: %s", err, errb.String())
	}
	return out.String()
}

// TestHookEditDiffOnCard: the real hook binary computes the diff of a
// Claude Code Edit and Write and of a Codex apply_patch against files on
// the agent's side, and the card shows its lines, marked and numbered,
// with who asked.
func TestHookEditDiffOnCard(t *testing.T) {
	e := testenv.NewEnv(t)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	bin := filepath.Join(t.TempDir(), "countersign")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/countersign").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	key, _, err := e.DB.CreateAPIKey(context.Background(), "dev runtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"COUNTERSIGN_URL=" + e.BaseURL, "COUNTERSIGN_API_KEY=" + key, "COUNTERSIGN_USER=" + dev.DemoMember.Subject}

	dir := t.TempDir()
	mainGo := filepath.Join(dir, "main.go")
	notes := filepath.Join(dir, "notes.txt")
	for p, text := range map[string]string{
		mainGo:                       "package main\n\nimport \"net/http\"\n\nfunc main() {\n\thttp.ListenAndServe(\":8080\", nil)\n}\n",
		notes:                        "deploy on friday\nkeep backups\n",
		filepath.Join(dir, "app.py"): "def greet():\n    print('hi')\n\n\ndef main():\n    greet()\n",
	} {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	claude := func(id, tool string, in map[string]any) map[string]any {
		return map[string]any{"session_id": "s-e2e", "hook_event_name": "PreToolUse", "prompt_id": "p1", "tool_name": tool,
			"tool_input": in, "tool_use_id": id, "cwd": dir}
	}
	runHookBinary(t, bin, env, claude("toolu_edit", "Edit", map[string]any{"file_path": mainGo,
		"old_string": "\thttp.ListenAndServe(\":8080\", nil)", "new_string": "\thttp.ListenAndServe(\"0.0.0.0:80\", nil)"}))
	runHookBinary(t, bin, env, claude("toolu_write", "Write", map[string]any{"file_path": notes,
		"content": "deploy any day\nkeep backups\n"}))
	patch := "*** Begin Patch\n*** Update File: app.py\n@@ def greet():\n-    print('hi')\n+    print('hello, world')\n*** Add File: docs/notes.md\n+# Notes\n+Written by the agent.\n*** End Patch"
	runHookBinary(t, bin, env, map[string]any{"session_id": "codex-e2e", "turn_id": "t1", "hook_event_name": "PreToolUse", "tool_use_id": "call-patch-1",
		"tool_name": "apply_patch", "tool_input": map[string]any{"command": patch}, "cwd": dir}, "--dialect", "codex")

	idOf := func(tool string) string {
		var id string
		if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE tool = $1 AND status = 'pending'`, tool).Scan(&id); err != nil {
			t.Fatalf("no pending %s: %v", tool, err)
		}
		return id
	}
	card := func(tool string) string { return `li[data-approval-id="` + idOf(tool) + `"]` }
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(card("apply_patch")+` [data-testid="diff"]`))); err != nil {
		t.Fatal(err)
	}
	lines := func(sel, kind string) []string {
		return eval[[]string](t, ctx, `[...document.querySelectorAll('`+sel+` tr[data-kind="`+kind+`"]')].map(r => r.innerText.replace(/\s+/g, ' ').trim())`)
	}
	check := func(name string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
	// Each line: old number, new number, mark, text (a screen reader hears
	// "removed:"/"added:" instead of the mark).
	check("Edit removed", lines(card("Edit"), "remove"), `6 − removed: http.ListenAndServe(":8080", nil)`)
	check("Edit added", lines(card("Edit"), "add"), `6 + added: http.ListenAndServe("0.0.0.0:80", nil)`)
	check("Write removed", lines(card("Write"), "remove"), `1 − removed: deploy on friday`)
	check("Write added", lines(card("Write"), "add"), `1 + added: deploy any day`)
	check("patch removed", lines(card("apply_patch"), "remove"), `2 − removed: print('hi')`)
	check("patch added", lines(card("apply_patch"), "add"), `2 + added: print('hello, world')`, `1 + added: # Notes`, `2 + added: Written by the agent.`)
	check("patch files", eval[[]string](t, ctx, `[...document.querySelectorAll('`+card("apply_patch")+` [data-testid="diff-path"]')].map(e => e.textContent)`),
		filepath.Join(dir, "app.py"), filepath.Join(dir, "docs/notes.md"))
	if got := text(t, ctx, card("apply_patch")+` [data-testid="diff-file-note"]`); !strings.EqualFold(got, "new file") {
		t.Errorf("the added file is marked %q", got)
	}
	for tool, client := range map[string]string{"Edit": "Claude Code", "apply_patch": "Codex"} {
		if got := text(t, ctx, card(tool)+` [data-testid="agent-client"]`); got != client {
			t.Errorf("%s: client %q", tool, got)
		}
		if got := text(t, ctx, card(tool)+` [data-testid="agent-key"]`); got != "dev runtime" {
			t.Errorf("%s: key %q", tool, got)
		}
		if got := text(t, ctx, card(tool)+` [data-testid="agent-dir"]`); got != dir {
			t.Errorf("%s: directory %q", tool, got)
		}
	}
	// The marks are there without colour: the sign column is text.
	if got := eval[string](t, ctx, `document.querySelector('`+card("Edit")+` tr[data-kind="remove"] .sign').textContent`); got != "−" {
		t.Errorf("sign %q", got)
	}
	checkAxe(t, ctx, "inbox with edit diffs")
	shootCard(t, ctx, card("Edit"), "who-edit")
	shootCard(t, ctx, card("apply_patch"), "who-apply-patch")
}

// shootCard saves one card at desktop and phone width when
// COUNTERSIGN_SCREENSHOTS names a folder.
func shootCard(t *testing.T, ctx context.Context, sel, name string) {
	dir := os.Getenv("COUNTERSIGN_SCREENSHOTS")
	if dir == "" {
		return
	}
	_ = os.MkdirAll(dir, 0o755)
	for _, size := range []struct {
		width, height int64
		mobile        bool
	}{{1280, 900, false}, {390, 844, true}} {
		var opts []chromedp.EmulateViewportOption
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(size.width, size.height, opts...), chromedp.Sleep(300*time.Millisecond)); err != nil {
			t.Logf("viewport: %v", err)
			continue
		}
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
		if err != nil {
			t.Logf("screenshot: %v", err)
			continue
		}
		_ = os.WriteFile(filepath.Join(dir, name+"-"+strconv.FormatInt(size.width, 10)+".png"), png, 0o644)
	}
}
