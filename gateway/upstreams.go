package gateway

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Command returns an Options.Upstream that starts name with args as a
// child process speaking MCP on its stdin and stdout; its stderr goes to
// stderr. The child does not get the COUNTERSIGN_* variables (it has no
// business with Countersign's API key), and on Linux it is sent SIGTERM if
// the gateway dies without stopping it.
func Command(name string, args []string, stderr io.Writer) func() (mcp.Transport, error) {
	return func() (mcp.Transport, error) {
		cmd := exec.Command(name, args...)
		cmd.Stderr = stderr
		cmd.Env = client.ChildEnv(os.Environ())
		cmd.SysProcAttr = childProcAttr()
		return &commandTransport{cmd: cmd}, nil
	}
}

// commandTransport runs the upstream as a child process speaking
// newline-delimited JSON-RPC on its stdin and stdout (see Frames).
type commandTransport struct {
	cmd      *exec.Cmd
	maxFrame int
}

func (t *commandTransport) setMaxFrame(n int) { t.maxFrame = n }

// terminateAfter is how long the child has to exit after its stdin closed
// (and again after SIGTERM) before it is sent the next signal.
const terminateAfter = 2 * time.Second

// Connect starts the child.
func (t *commandTransport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	cmd := t.cmd
	// As MCP's stdio transport says: close the child's stdin, wait, then
	// SIGTERM, wait, then SIGKILL.
	stop := func() error {
		_ = stdin.Close()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		wait := func() bool {
			select {
			case <-exited:
				return true
			case <-time.After(terminateAfter):
				return false
			}
		}
		if wait() {
			return nil
		}
		if cmd.Process.Signal(syscall.SIGTERM) == nil && wait() {
			return nil
		}
		_ = cmd.Process.Kill()
		<-exited
		return nil
	}
	return newFrameConn(stdout, stdin, t.maxFrame, stop), nil
}

// StreamableHTTP returns an Options.Upstream that connects to an MCP
// server over streamable HTTP, sending header (its credentials) with
// every request.
func StreamableHTTP(endpoint string, header http.Header) func() (mcp.Transport, error) {
	hc := &http.Client{Transport: headerTransport{header: header, next: http.DefaultTransport}}
	return func() (mcp.Transport, error) {
		return &streamableTransport{endpoint: endpoint, hc: hc}, nil
	}
}

type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.header {
		r.Header[k] = vs
	}
	return t.next.RoundTrip(r)
}
