package client_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/web"
)

// startExampleServer gives the Example functions a real Countersign:
// COUNTERSIGN_URL and COUNTERSIGN_API_KEY point at it, and the demo member
// decides in the browser, approving mail to finance@acme.example and
// rejecting any other.
func startExampleServer(t testing.TB) error {
	// A short wait cap: should the reviewer fail, the examples end with
	// approval_timeout instead of hanging.
	e := testenv.NewEnv(t, func(c *web.Config) { c.ApprovalTimeout = 20 * time.Second })
	if err := os.Setenv("COUNTERSIGN_URL", e.BaseURL); err != nil {
		return err
	}
	if err := os.Setenv("COUNTERSIGN_API_KEY", e.APIKey()); err != nil {
		return err
	}
	r := e.StartReviewer("member", func(p testenv.PendingCall) (string, string) {
		if p.Tool != "send_email" {
			return "", ""
		}
		if strings.Trim(p.Args["to"], `"`) == "finance@acme.example" {
			return "approve", ""
		}
		return "reject", "Use the billing alias"
	})
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	})
	return nil
}
