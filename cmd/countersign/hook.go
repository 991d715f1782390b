package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
)

const hookUsage = "countersign hook [--dialect claude-code|codex|codex-permission-request] [--url URL] [--user SUBJECT] [--api-key-file FILE] [--wait 50s] [--defer] [--secret-files PATTERNS] [--read-outside DIRS]"

// errHookFailed: the hook wrote its reason and must exit 2, the code both
// agents read as "do not run" (1 would let Claude Code run the call).
var errHookFailed = errors.New("hook failed")

// runHook is a coding agent's pre-tool-use hook: the hook input on stdin,
// the agent's answer on stdout.
func runHook(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: "+hookUsage)
		fs.PrintDefaults()
	}
	dialect := fs.String("dialect", hook.ClaudeCode, "the agent's hook format: claude-code (PreToolUse), codex (PreToolUse) or codex-permission-request")
	// The environment is read after parsing, not shown as flag defaults:
	// help text must never print the API key.
	url := fs.String("url", "", "Countersign's address (default $COUNTERSIGN_URL)")
	key := fs.String("api-key", "", "a runtime API key, for one-off use only: an agent may show the hook's command line to the model (default $COUNTERSIGN_API_KEY)")
	keyFile := fs.String("api-key-file", "", "a file (mode 0600) holding the runtime API key (default $COUNTERSIGN_API_KEY_FILE)")
	user := fs.String("user", "", "OIDC subject of the person whose agent this is (default $COUNTERSIGN_USER)")
	wait := fs.Duration("wait", hook.DefaultWait, "answer within this time of being called, whatever happens; set the agent's hook timeout at least 10s longer")
	secrets := fs.String("secret-files", "", "more files whose content is never sent, comma-separated patterns beside the built-in list, e.g. '~/work/creds/**,**/*.tfstate' (default $COUNTERSIGN_HOOK_SECRET_FILES)")
	outside := fs.String("read-outside", "", "directories outside the agent's working directory whose files may be read for a diff, comma-separated (default $COUNTERSIGN_HOOK_READ_OUTSIDE)")
	deferAnswer := fs.Bool("defer", false, "Claude Code -p runs: answer defer instead of deny when the wait ends")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		// Help included: an agent must never read exit 0 without a decision.
		fmt.Fprintln(stderr, "countersign hook: bad flags — the call did not run.")
		return hook.ExitFailed
	}
	orEnv(url, "COUNTERSIGN_URL")
	orEnv(user, "COUNTERSIGN_USER")
	orEnv(secrets, "COUNTERSIGN_HOOK_SECRET_FILES")
	orEnv(outside, "COUNTERSIGN_HOOK_READ_OUTSIDE")
	apiKey, err := runtimeKey(*key, *keyFile)
	if err != nil {
		fmt.Fprintln(stderr, "countersign hook: "+err.Error()+" — the call did not run.")
		return hook.ExitFailed
	}
	files := hook.Files{KeyFile: *keyFile, Secret: commaList(*secrets), ReadOutside: commaList(*outside)}
	if files.KeyFile == "" && *key == "" && os.Getenv(envAPIKey) == "" {
		files.KeyFile = os.Getenv(envAPIKeyFile)
	}
	cfg := hook.Config{Client: client.New(*url, apiKey), User: *user, Dialect: *dialect, Wait: *wait, Defer: *deferAnswer, Files: files}
	return hook.Run(ctx, cfg, stdin, stdout, stderr)
}

// commaList is s cut at commas, blanks around each part dropped.
func commaList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func orEnv(v *string, name string) {
	if *v == "" {
		*v = os.Getenv(name)
	}
}

// hookEntry is one command hook as both agents' hook settings take it.
type hookEntry struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"` // seconds
}

// hookWait and hookTimeout are the pair the printed lines set: the hook
// answers within --wait of being called, whatever the call names, and the
// agent's timeout leaves a margin above it — an agent that kills a hook at
// its timeout lets the call through (Codex) or to its own prompt.
const (
	hookWait    = hook.DefaultWait
	hookTimeout = 60 // seconds: hookWait plus 10 s
)

// printHookLines prints a ready hook entry for Claude Code and one for
// Codex. Neither holds the key: the hook reads it from keyFile.
func printHookLines(w io.Writer, baseURL, keyFile, user string) {
	line := func(dialect string) string {
		cmd := strings.Join([]string{shellWord(selfCommand()), "hook", "--dialect", dialect, "--url", shellWord(baseURL),
			"--user", shellWord(user), "--api-key-file", shellWord(keyFile), "--wait", hookWait.String()}, " ")
		b, _ := json.Marshal(hookEntry{Type: "command", Command: cmd, Timeout: hookTimeout})
		return string(b)
	}
	fmt.Fprintln(w, "Claude Code hook (.claude/settings.json → hooks.PreToolUse → {\"matcher\": \"*\", \"hooks\": [this]}; see docs/agents.md):")
	fmt.Fprintln(w, "  "+line(hook.ClaudeCode))
	fmt.Fprintln(w, "Codex hook ($CODEX_HOME/hooks.json → hooks.PreToolUse → {\"hooks\": [this]}; then trust it with /hooks; see docs/agents.md):")
	fmt.Fprintln(w, "  "+line(hook.Codex))
}

// shellWord quotes s for sh when it holds anything but plain characters:
// both agents run a hook's command with a shell.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-:=@+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// selfCommand is how a printed command line should call this binary: its
// path, or "countersign" under go run, whose binary is gone when it stops.
func selfCommand() string {
	bin, err := os.Executable()
	if err != nil || strings.Contains(bin, "go-build") {
		return "countersign"
	}
	return bin
}
