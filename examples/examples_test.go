// Package examples runs the Python and TypeScript examples against a real
// Countersign, so that what the READMEs show keeps working.
package examples

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/web"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestPythonExample runs examples/python/test_gate.py.
func TestPythonExample(t *testing.T) {
	runExample(t, "python3", "python", "test_gate.py")
}

// TestTypeScriptExample runs examples/typescript/test_gate.mjs.
func TestTypeScriptExample(t *testing.T) {
	runExample(t, "node", "typescript", "test_gate.mjs")
}

// runExample starts a server and a person (demo-member, deciding in the
// browser: mail to finance@acme.example is approved, any other rejected
// with a reason), then runs the script against them. Without the
// interpreter the test is skipped, except in CI (COUNTERSIGN_E2E=1), where
// it must run.
func runExample(t *testing.T, interpreter, dir, script string) {
	bin, err := exec.LookPath(interpreter)
	if err != nil {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			t.Fatalf("%s is needed to run the %s example (COUNTERSIGN_E2E=1): %v", interpreter, dir, err)
		}
		t.Skipf("%s not found: the %s example is not run (install it, or set COUNTERSIGN_E2E=1 to require it)", interpreter, dir)
	}
	// A short wait cap: should the person fail to answer, the script sees
	// approval_timeout and fails instead of hanging.
	e := testenv.NewEnv(t, func(c *web.Config) { c.ApprovalTimeout = 20 * time.Second })
	key := e.APIKey()
	r := e.StartReviewer("member", func(p testenv.PendingCall) (string, string) {
		if strings.Trim(p.Args["to"], `"`) == "finance@acme.example" {
			return "approve", ""
		}
		return "reject", "Use the billing alias"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COUNTERSIGN_URL="+e.BaseURL, "COUNTERSIGN_API_KEY="+key)
	out, err := cmd.CombinedOutput()
	if rerr := r.Stop(); rerr != nil {
		t.Errorf("the person could not decide: %v", rerr)
	}
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", interpreter, script, err, out)
	}
	t.Logf("%s", out)
	if !strings.Contains(string(out), "checks passed") {
		t.Fatalf("%s %s did not finish its checks:\n%s", interpreter, script, out)
	}
}
