package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/countersign/countersign/appserver"
	"github.com/countersign/countersign/client"
)

const codexAppUsage = "countersign codex-app-server [--url URL --user SUBJECT --api-key-file FILE] -- codex app-server [ARGS…]"

// runCodexApp is what an IDE starts in place of `codex app-server`: it
// starts the real one and relays every message, answering the approval
// requests through Countersign.
func runCodexApp(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlags("codex-app-server", codexAppUsage, stderr, false)
	base := fs.String("url", envOr("COUNTERSIGN_URL", "http://localhost:8080"), "Countersign's base URL (or COUNTERSIGN_URL)")
	key := fs.String("api-key", "", "runtime API key, for one-off use only (default $COUNTERSIGN_API_KEY)")
	keyFile := fs.String("api-key-file", "", "a file (mode 0600) holding the runtime API key (default $COUNTERSIGN_API_KEY_FILE)")
	user := fs.String("user", os.Getenv("COUNTERSIGN_USER"), "OIDC subject of the person whose agent this is (or COUNTERSIGN_USER)")
	verbose := fs.Bool("v", false, "log debug messages")
	if err := fs.Parse(args); err != nil {
		return usageErr(err)
	}
	command := fs.Args()
	apiKey, err := runtimeKey(*key, *keyFile)
	if err != nil {
		return err
	}
	if apiKey == "" || *user == "" || len(command) == 0 {
		fs.Usage()
		return errUsage
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := newLogger(stderr, level) // stdout is the protocol
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = stderr
	// Codex runs the model's commands with its environment: the key stays
	// here.
	cmd.Env = client.ChildEnv(os.Environ())
	// The app-server ends with this process, even one killed: its input
	// closes, and on Linux the kernel also sends it SIGTERM.
	cmd.SysProcAttr = childProcAttr()
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("could not start %s: %w", command[0], err)
	}
	p := appserver.New(appserver.Options{Client: client.New(*base, apiKey), User: *user, Log: log})
	runErr := p.Run(ctx, os.Stdin, os.Stdout, in, out)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		err = <-done
	}
	if runErr != nil {
		return runErr
	}
	if err != nil {
		return fmt.Errorf("codex app-server: %w", err)
	}
	return nil
}
