package gateway_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gatewayEnv makes the test binary run as a gateway on stdio in front of
// itself as the notes server, like `countersign mcp -- notes`.
const gatewayEnv = "GATEWAY_TEST_GATEWAY"

func runGateway() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The child is the notes server, not another gateway.
	_ = os.Unsetenv(gatewayEnv)
	_ = os.Setenv(upstreamEnv, "1")
	g, err := gateway.New(gateway.Options{Connector: "notes", User: dev.DemoMember.Subject,
		Client:   client.New(os.Getenv("GATEWAY_TEST_URL"), os.Getenv("GATEWAY_TEST_KEY")),
		Upstream: gateway.Command(os.Args[0], []string{"-test.run=^$"}, os.Stderr)})
	if err == nil {
		err = g.Serve(ctx, &mcp.StdioTransport{})
	}
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}

// commandUpstream is the notes server as a child process.
func commandUpstream(t *testing.T) func() (mcp.Transport, error) {
	t.Setenv(upstreamEnv, "1")
	return gateway.Command(os.Args[0], []string{"-test.run=^$"}, io.Discard)
}

func pidOf(t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "pid", Arguments: map[string]any{}})
	if err != nil || r.IsError {
		t.Fatalf("pid: %v %v", err, r)
	}
	pid, err := strconv.Atoi(text(r))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone: the process does not exist any more (exited and reaped).
func gone(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return errors.Is(err, os.ErrNotExist)
}

// An upstream that crashes gives a clear error, and the next call starts
// it again; when the client goes away (stdin EOF), the child is stopped.
func TestUpstreamCrashRestartsAndEOFStopsChild(t *testing.T) {
	h := start(t, commandUpstream(t))
	first := pidOf(t, h.cs)
	r, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, r, gateway.CodeUpstreamUnavailable)
	second := pidOf(t, h.cs)
	if second == first || !gone(first) {
		t.Fatalf("after the crash: pid %d then %d (first gone: %v)", first, second, gone(first))
	}
	// The client goes away: Serve returns and the child is stopped.
	_ = h.cs.Close()
	h.waitServe(t)
	if !gone(second) {
		t.Fatalf("upstream %d still running after the gateway stopped", second)
	}
}

// SIGTERM and stdin EOF end a gateway process and its child: no orphans.
func TestGatewayProcessLeavesNoOrphans(t *testing.T) {
	e := start(t, (&notes{}).inMemory()).e // a server, and the notes catalog registered
	for _, how := range []string{"SIGTERM", "EOF"} {
		t.Run(how, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), gatewayEnv+"=1", "GATEWAY_TEST_URL="+e.BaseURL, "GATEWAY_TEST_KEY="+e.APIKey())
			cmd.Stderr = os.Stderr
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			child := pidOf(t, cs)
			if how == "SIGTERM" {
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				// Stdin still open: the signal alone ends the gateway, which
				// stops its child before it exits.
				_ = cs.Wait()
				if !gone(child) {
					t.Fatalf("child %d still there when the gateway closed its stdout", child)
				}
			}
			_ = cs.Close() // closes the gateway's stdin and waits for it to exit
			if cmd.ProcessState == nil || !gone(cmd.Process.Pid) || !gone(child) {
				t.Fatalf("gateway %d exited: %v; child %d gone: %v", cmd.Process.Pid, cmd.ProcessState, child, gone(child))
			}
		})
	}
}
