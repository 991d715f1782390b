package mcpe2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/testenv"
)

// startEverythingHTTP runs the reference server in its streamable HTTP
// mode and returns its MCP endpoint.
func startEverythingHTTP(t *testing.T, node string, env []string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	cmd := exec.Command(node, everything, "streamableHttp")
	cmd.Env = append(env, "PORT="+port)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the streamable HTTP server did not start")
		}
	}
	return "http://127.0.0.1:" + port + "/mcp"
}

// outsideCalls runs the same short session on s: the roots the server
// asks for after initialized, get-roots-list, and the simulated logging
// that arrives between calls.
func outsideCalls(t *testing.T, s *session, afterInit func()) (rootsResult string, m map[string]int, roots int) {
	t.Helper()
	s.call(0, "initialize", everythingInit)
	s.notify("notifications/initialized", `{}`)
	afterInit()
	time.Sleep(1500 * time.Millisecond) // the server asks for roots 350 ms after initialized
	s.call(1, "logging/setLevel", `{"level":"debug"}`)
	r := s.call(2, "tools/call", `{"name":"get-roots-list","arguments":{}}`)
	s.call(3, "tools/call", `{"name":"toggle-simulated-logging","arguments":{}}`)
	time.Sleep(4 * time.Second)
	s.call(4, "tools/call", `{"name":"toggle-simulated-logging","arguments":{}}`)
	for _, f := range s.snapshot() {
		if f.Method == "notifications/message" && strings.Contains(string(f.Params), "Roots updated") {
			roots++
		}
	}
	return normal(r.Result), methods(s.snapshot()), roots
}

// Streamable HTTP through the gateway behaves as the server direct: its
// roots/list after initialized reaches the client (and the answer the
// server), get-roots-list returns the client's roots, and the simulated
// log messages sent between calls arrive.
func TestEverythingStreamableHTTPOutsideCalls(t *testing.T) {
	node := requireTools(t)
	requireFile(t, everything)
	e := testenv.NewEnv(t)
	bin, _, env, gwEnv := gatewaySetup(t, e)

	direct := startSession(t, node, []string{everything, "stdio"}, env)
	wantRoots, wm, wantUpdated := outsideCalls(t, direct, func() {})

	endpoint := startEverythingHTTP(t, node, env)
	gw := startSession(t, bin, []string{"mcp", "--connector", "everything", "--upstream", endpoint}, gwEnv)
	gotRoots, gm, gotUpdated := outsideCalls(t, gw, func() {
		for deadline := time.Now().Add(15 * time.Second); count(t, e, `SELECT count(*) FROM tools WHERE connector = 'everything' AND name = 'get-roots-list'`) < 1; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the gateway did not register the server's tools")
			}
		}
		if _, err := e.DB.Pool.Exec(context.Background(), `UPDATE tools SET mode = 'allow' WHERE connector = 'everything'`); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("direct: %v\ngateway: %v", wm, gm)
	if wm["roots/list"] != 1 || gm["roots/list"] != wm["roots/list"] {
		t.Errorf("roots/list: direct %d, through the gateway %d", wm["roots/list"], gm["roots/list"])
	}
	if wantUpdated != 1 || gotUpdated != wantUpdated {
		t.Errorf("the server's log of the roots it got: direct %d, through the gateway %d", wantUpdated, gotUpdated)
	}
	if gotRoots != wantRoots || !strings.Contains(gotRoots, "file:///tmp/countersign-e2e") {
		t.Errorf("get-roots-list:\ndirect  %s\ngateway %s", wantRoots, gotRoots)
	}
	// Beside the roots log line, at least one simulated log message.
	if wm["notifications/message"] < 2 || gm["notifications/message"] < 2 {
		t.Errorf("log messages: direct %d, through the gateway %d", wm["notifications/message"], gm["notifications/message"])
	}
}
