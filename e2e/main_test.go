// Package e2e drives Countersign through real headless Chromium: the flows
// a person clicks through, against a real server, database and identity
// provider.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/internal/testenv"
)

var browserCtx context.Context

func chromiumPath() string {
	if p := os.Getenv("COUNTERSIGN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func TestMain(m *testing.M) {
	path := chromiumPath()
	if path == "" {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			fmt.Fprintln(os.Stderr, "e2e: COUNTERSIGN_E2E=1 but Chromium was not found (apt-get install -y chromium)")
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "e2e: Chromium not found; browser tests skipped (set COUNTERSIGN_E2E=1 to make this an error)")
		os.Exit(0)
	}
	dir, _ := os.MkdirTemp("", "countersign-e2e-chromium-")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	// The first action starts the browser; its context must not be one
	// with a deadline, or the browser dies with it.
	if err := chromedp.Do(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start Chromium:", err)
		os.Exit(1)
	}
	browserCtx = ctx
	code := testenv.Run(m)
	cancelBrowser()
	cancelAlloc()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// newTab opens a tab in a fresh browser context (own cookies) for t.
func newTab(t *testing.T) context.Context {
	t.Helper()
	return newTabFor(t, 90*time.Second)
}

// newTabFor opens a tab that lives at most d: longer for a test that walks
// every screen.
func newTabFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, d)
	t.Cleanup(cancelTimeout)
	return ctx
}
