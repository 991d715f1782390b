package gateway

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

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
		cmd.Env = childEnv(os.Environ())
		cmd.SysProcAttr = childProcAttr()
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}
}

func childEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "COUNTERSIGN_") {
			out = append(out, kv)
		}
	}
	return out
}

// StreamableHTTP returns an Options.Upstream that connects to an MCP
// server over streamable HTTP, sending header (its credentials) with
// every request.
func StreamableHTTP(endpoint string, header http.Header) func() (mcp.Transport, error) {
	hc := &http.Client{Transport: headerTransport{header: header, next: http.DefaultTransport}}
	return func() (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil
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
