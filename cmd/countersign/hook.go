package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
)

const hookUsage = "countersign hook [--dialect claude-code|codex] [--url URL] [--api-key KEY] [--user SUBJECT] [--wait 50s] [--defer]"

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
	dialect := fs.String("dialect", hook.ClaudeCode, "the agent's hook format: claude-code (PreToolUse) or codex (PermissionRequest)")
	// The environment is read after parsing, not shown as flag defaults:
	// help text must never print the API key.
	url := fs.String("url", "", "Countersign's address (default $COUNTERSIGN_URL)")
	key := fs.String("api-key", "", "a runtime API key (default $COUNTERSIGN_API_KEY)")
	user := fs.String("user", "", "OIDC subject of the person whose agent this is (default $COUNTERSIGN_USER)")
	wait := fs.Duration("wait", hook.DefaultWait, "answer by then; keep it below the agent's hook timeout")
	deferAnswer := fs.Bool("defer", false, "Claude Code -p runs: answer defer instead of deny when the wait ends")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		// Help included: an agent must never read exit 0 without a decision.
		fmt.Fprintln(stderr, "countersign hook: bad flags — the call did not run.")
		return hook.ExitFailed
	}
	orEnv(url, "COUNTERSIGN_URL")
	orEnv(key, "COUNTERSIGN_API_KEY")
	orEnv(user, "COUNTERSIGN_USER")
	cfg := hook.Config{Client: client.New(*url, *key), User: *user, Dialect: *dialect, Wait: *wait, Defer: *deferAnswer}
	return hook.Run(ctx, cfg, stdin, stdout, stderr)
}

func orEnv(v *string, name string) {
	if *v == "" {
		*v = os.Getenv(name)
	}
}

// printHookLine prints the hook command for a server, ready for an agent's
// settings (docs/agents.md has the full snippets).
func printHookLine(w io.Writer, baseURL, key, user string) {
	bin := selfCommand()
	fmt.Fprintln(w, "Claude Code hook (.claude/settings.json → hooks.PreToolUse, matcher \"*\", timeout 60; see docs/agents.md):")
	fmt.Fprintf(w, "  %s hook --url %s --api-key %s --user %s\n", bin, baseURL, key, user)
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
