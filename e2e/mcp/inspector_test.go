package mcpe2e

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// inspector runs the Inspector's CLI once (a client that starts its
// server anew for every command) and returns what it printed.
func inspector(t *testing.T, env []string, server []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("node_modules/.bin/inspector", append(append([]string{"--cli"}, server...), args...)...)
	cmd.Env = env
	// It exits 1 on an isError result, which is an answer here.
	out, err := cmd.Output()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("inspector %v: %v", args, err)
	}
	return string(out)
}

// The Inspector's CLI lists the same tools direct and through the
// gateway; and since it starts a new gateway for every call, a call
// approved after the first process gave up runs in the next one, once.
func TestInspectorCLIThroughGateway(t *testing.T) {
	node := requireTools(t)
	requireFile(t, "node_modules/.bin/inspector")
	requireFile(t, everything)
	e := testenv.NewEnv(t)
	member := e.NewBrowser()
	member.SignIn("member")
	bin, keyFile, env, gwEnv := gatewaySetup(t, e)
	direct := []string{node, everything, "stdio"}
	// The Inspector hands its server only a few variables (HOME, PATH, …):
	// the gateway's settings are flags, in a script.
	script := filepath.Join(t.TempDir(), "gateway.sh")
	line := "#!/bin/sh\nexec '" + bin + "' mcp --url " + e.BaseURL + " --user " + dev.DemoMember.Subject + " --api-key-file '" + keyFile +
		"' --connector everything --hold 1s -- '" + node + "' '" + everything + "' stdio\n"
	if err := os.WriteFile(script, []byte(line), 0o755); err != nil {
		t.Fatal(err)
	}
	gateway := []string{script}

	if d, g := inspector(t, env, direct, "--method", "tools/list"), inspector(t, gwEnv, gateway, "--method", "tools/list"); d != g {
		t.Fatalf("tools/list differs:\ndirect  %s\ngateway %s", d, g)
	}
	call := []string{"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=approved later"}
	if _, err := e.DB.Pool.Exec(context.Background(), `UPDATE tools SET mode = 'require_approval' WHERE connector = 'everything' AND name = 'echo'`); err != nil {
		t.Fatal(err)
	}
	first := inspector(t, gwEnv, gateway, call...)
	if !strings.Contains(first, "approval_pending") {
		t.Fatalf("first call: %s", first)
	}
	id := waitPending(t, e, "echo")
	decide(t, member, id, url.Values{"decision": {"approve"}})
	if second := inspector(t, gwEnv, gateway, call...); !strings.Contains(second, "Echo: approved later") {
		t.Fatalf("the approved call in a new gateway process: %s", second)
	}
	if third := inspector(t, gwEnv, gateway, call...); !strings.Contains(third, "approval_pending") {
		t.Fatalf("the approval was used twice: %s", third)
	}
	if n := count(t, e, `SELECT count(*) FROM approvals WHERE status = 'consumed'`); n != 1 {
		t.Fatalf("%d consumed items", n)
	}
}
