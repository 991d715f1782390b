// Command countersign is the approval plane for AI agents' tool calls.
//
//	countersign serve                      run the server (production)
//	countersign dev                        the whole product on one machine
//	countersign migrate                    apply database migrations
//	countersign apikey create --name NAME [--team TEAM]  print a new runtime API key once
//	countersign audit verify [--public-key FILE]   check the audit log's hash chain (and signed checkpoints)
//	countersign audit keygen --out FILE    make the checkpoints' Ed25519 signing key
//	countersign demo-agent                 a scripted runtime against any server
//	countersign bench                      measure decision latency and waiter cost
//	countersign hook                       Claude Code's or Codex's pre-tool-use hook
//	countersign version                    print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/countersign/countersign/web"
)

// version is set at build time with -ldflags "-X main.version=..."; when
// it is not, the module version from the build information is shown.
var version = "dev"

// buildVersion is which build this is: version, revision, schema.
func buildVersion() web.Build { return web.ReadBuild(version) }

type command struct {
	name, usage, summary string
	run                  func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "countersign serve", "run the server; configuration comes from COUNTERSIGN_* variables", runServe},
		{"dev", "countersign dev [--data DIR] [--no-agent]", "run everything locally: private Postgres, development sign-in, demo agent", runDev},
		{"migrate", "countersign migrate [--check | --down-to VERSION]", "apply database migrations (serve also does this at start); --check says what would run and whether it can be undone", runMigrate},
		{"apikey", "countersign apikey create --name NAME", "create a runtime API key and print it once", runAPIKey},
		{"audit", "countersign audit verify [--public-key FILE] | keygen --out FILE", "walk the audit log's hash chain and report the first broken link; make a checkpoint signing key", runAudit},
		{"demo-agent", "countersign demo-agent --url URL --api-key KEY --user SUBJECT [--interval 8s]", "a scripted agent runtime that keeps asking for approvals", runDemoAgent},
		{"mcp", mcpUsage, "an MCP server that checks every tool call of the server it wraps", runMCP},
		{"codex-app-server", codexAppUsage, "a proxy in front of `codex app-server` that answers its approval requests through Countersign", runCodexApp},
		{"bench", "countersign bench [--waiters 10000]", "measure decision-to-runtime latency and the cost of waiting runtimes", runBench},
		{"hook", hookUsage, "a coding agent's pre-tool-use hook: asks Countersign, answers in the agent's format", func(ctx context.Context, args []string, out, errw io.Writer) error {
			if runHook(ctx, args, os.Stdin, out, errw) != 0 {
				return errHookFailed
			}
			return nil
		}},
		{"version", "countersign version", "print the version, the revision it was built from and the schema version it knows", func(_ context.Context, _ []string, out, _ io.Writer) error {
			fmt.Fprint(out, buildVersion().Lines())
			return nil
		}},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage), errors.Is(err, errHookFailed):
			return 2
		}
		fmt.Fprintln(stderr, "countersign "+c.name+": "+err.Error())
		return 1
	}
	fmt.Fprintf(stderr, "countersign: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprintln(w, "Countersign — the approval plane for AI agents' tool calls.")
	fmt.Fprintln(w, "\nUsage:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-72s %s\n", c.usage, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'countersign COMMAND --help' for a command's flags.")
}

// newFlags makes a FlagSet whose --help prints the command's usage and the
// configuration variables it reads.
func newFlags(name, usageLine string, stderr io.Writer, env bool) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: "+usageLine)
		fs.PrintDefaults()
		if env {
			fmt.Fprintln(stderr, "\nEnvironment:")
			for _, s := range web.Settings {
				def := s.Default
				if def == "" {
					def = "-"
				}
				fmt.Fprintf(stderr, "  %-36s %-22s %s\n", s.Name, def, s.Meaning)
			}
		}
	}
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
