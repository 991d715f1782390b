package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// signIn signs in through the real pages: the Sign in button, the
// development provider's user list, the callback.
func signIn(t *testing.T, ctx context.Context, e *testenv.Env, user string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(e.BaseURL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="sign-in"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="sign-in"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="demo-user-`+user+`"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="demo-user-`+user+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="user-name"]`)),
	)
	if err != nil {
		t.Fatalf("sign in as %s: %v", user, err)
	}
}

func text(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("text of %s: %v", css, err)
	}
	return strings.TrimSpace(s)
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// screenshot saves the page at desktop and phone width when
// COUNTERSIGN_SCREENSHOTS names a folder.
func screenshot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("COUNTERSIGN_SCREENSHOTS")
	if dir == "" {
		return
	}
	_ = os.MkdirAll(dir, 0o755)
	for _, size := range []struct {
		label         string
		width, height int64
		mobile        bool
	}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
		var opts []chromedp.EmulateViewportOption
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		err := chromedp.Do(ctx, chromedp.EmulateViewport(size.width, size.height, opts...), chromedp.Sleep(300*time.Millisecond))
		if err != nil {
			t.Logf("screenshot viewport: %v", err)
			continue
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Logf("screenshot: %v", err)
			continue
		}
		_ = os.WriteFile(filepath.Join(dir, name+"-"+size.label+".png"), png, 0o644)
	}
	_ = chromedp.Do(ctx, chromedp.EmulateReset())
}

// runtime is an agent runtime connected to e with the demo catalog.
func runtime(t *testing.T, e *testenv.Env) *client.Client {
	t.Helper()
	c := client.New(e.BaseURL, e.APIKey())
	for name, conn := range dev.DemoCatalog {
		if err := c.SyncConnector(context.Background(), name, conn); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

type gateResult struct {
	out client.Outcome
	err error
}

func gate(c *client.Client, call client.Call) chan gateResult {
	ch := make(chan gateResult, 1)
	go func() {
		out, err := c.Gate(context.Background(), call)
		ch <- gateResult{out, err}
	}()
	return ch
}

func result(t *testing.T, ch chan gateResult) gateResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("Gate did not return")
	}
	return gateResult{}
}
