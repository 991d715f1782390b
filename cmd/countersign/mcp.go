package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/gateway"
	"github.com/countersign/countersign/hook"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const mcpUsage = "countersign mcp --connector NAME [--url URL --user SUBJECT --api-key-file FILE --hold 45s --max-frame 256MiB --task-dir DIR] (-- COMMAND [ARGS…] | --upstream URL [--header 'Name: value'])"

// runMCP is an MCP server on stdin/stdout that an MCP client launches in
// place of the real server; every tools/call is checked with Countersign
// before it reaches the real (upstream) server.
func runMCP(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlags("mcp", mcpUsage, stderr, false)
	connector := fs.String("connector", "", "connector the upstream's tools are registered as (required)")
	base := fs.String("url", envOr("COUNTERSIGN_URL", "http://localhost:8080"), "Countersign's base URL (or COUNTERSIGN_URL)")
	// The key is not a flag default: help text would print it.
	key := fs.String("api-key", "", "runtime API key, for one-off use only (default $COUNTERSIGN_API_KEY)")
	keyFile := fs.String("api-key-file", "", "a file (mode 0600) holding the runtime API key (default $COUNTERSIGN_API_KEY_FILE)")
	user := fs.String("user", os.Getenv("COUNTERSIGN_USER"), "OIDC subject of the person whose calls these are (or COUNTERSIGN_USER)")
	hold := fs.Duration("hold", gateway.DefaultHold, "longest wait for a person before the call returns the approval link")
	upstreamURL := fs.String("upstream", "", "connect to an MCP server over streamable HTTP instead of starting COMMAND")
	var headers headerFlag
	fs.Var(&headers, "header", "HTTP header for --upstream, 'Name: value' (repeatable)")
	maxFrame := frameSize(gateway.DefaultMaxFrame)
	fs.Var(&maxFrame, "max-frame", "largest JSON-RPC message relayed either way, in bytes or with KiB, MiB or GiB (a larger request gets an error of its own)")
	taskDir := fs.String("task-dir", defaultTaskDir(), "directory (mode 0700) keeping the MCP tasks of calls that wait for a person, so that a new gateway process picks them up; \"off\": no tasks, every client gets hold-and-retry")
	verbose := fs.Bool("v", false, "log debug messages")
	if err := fs.Parse(args); err != nil {
		return usageErr(err)
	}
	command := fs.Args()
	apiKey, err := runtimeKey(*key, *keyFile)
	if err != nil {
		return err
	}
	if hook.ReservedConnector(*connector) {
		// A full sync of this connector would retire the agent's own
		// tools and put the server's under their policies.
		return fmt.Errorf("the connector name %q belongs to the agent's own tools; name the server's connector differently (for example mcp-%s)", *connector, *connector)
	}
	if *connector == "" || apiKey == "" || *user == "" || *hold <= 0 || (len(command) == 0) == (*upstreamURL == "") {
		fs.Usage()
		return errUsage
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := newLogger(stderr, level) // stdout is the protocol
	var up func() (mcp.Transport, error)
	if *upstreamURL != "" {
		up = gateway.StreamableHTTP(*upstreamURL, http.Header(headers))
	} else {
		up = gateway.Command(command[0], command[1:], stderr)
	}
	var tasks *gateway.TaskStore
	if *taskDir != "off" && *taskDir != "" {
		tasks, err = gateway.OpenTaskStore(*taskDir)
		if err != nil && flagSet(fs, "task-dir") {
			return err
		}
		if err != nil {
			// The default place is unusable: clients get hold-and-retry.
			log.Warn("MCP tasks are off", "err", err)
		}
	}
	g, err := gateway.New(gateway.Options{Connector: *connector, Client: client.New(*base, apiKey), User: *user,
		Upstream: up, Hold: *hold, MaxFrame: int(maxFrame), Tasks: tasks, Version: version, Log: log})
	if err != nil {
		return err
	}
	return g.Serve(ctx, gateway.Stdio())
}

// defaultTaskDir is where the gateway keeps MCP tasks unless told:
// $XDG_STATE_HOME/countersign/mcp-tasks, by default under
// ~/.local/state ("" without a home directory: no tasks).
func defaultTaskDir() string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "countersign", "mcp-tasks")
}

// flagSet: the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func usageErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return errUsage
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// frameSize is a --max-frame value: bytes, or a number with KiB, MiB or
// GiB.
type frameSize int

func (f *frameSize) String() string { return strconv.Itoa(int(*f)) }

func (f *frameSize) Set(v string) error {
	mult := 1
	num := strings.TrimSpace(v)
	for suffix, m := range map[string]int{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if n, ok := strings.CutSuffix(num, suffix); ok {
			num, mult = strings.TrimSpace(n), m
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > (1<<40)/mult || n*mult < 1024 {
		return fmt.Errorf("want a size of at least 1KiB such as 256MiB, got %q", v)
	}
	*f = frameSize(n * mult)
	return nil
}

// headerFlag collects --header 'Name: value'.
type headerFlag http.Header

func (h *headerFlag) String() string { return "" }

func (h *headerFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("want 'Name: value', got %q", v)
	}
	if *h == nil {
		*h = headerFlag{}
	}
	http.Header(*h).Add(strings.TrimSpace(name), strings.TrimSpace(value))
	return nil
}

// mcpWrapperLine is the command line that wraps an MCP server (here the
// reference filesystem server) with the gateway for the development server.
func mcpWrapperLine(baseURL, keyFile string) string {
	return shellWord(selfCommand()) + " mcp --url " + shellWord(baseURL) + " --api-key-file " + shellWord(keyFile) + " --user " + dev.DemoMember.Subject +
		" --connector filesystem -- npx -y @modelcontextprotocol/server-filesystem ."
}
