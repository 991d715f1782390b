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
// COUNTERSIGN_SCREENSHOTS names a folder; in dark mode too (name-dark)
// when COUNTERSIGN_SCREENSHOTS_DARK is 1.
func screenshot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("COUNTERSIGN_SCREENSHOTS")
	if dir == "" {
		return
	}
	shootSizes(t, ctx, dir, name)
	if os.Getenv("COUNTERSIGN_SCREENSHOTS_DARK") == "1" {
		if err := chromedp.Do(ctx, dark(true)); err == nil {
			shootSizes(t, ctx, dir, name+"-dark")
			_ = chromedp.Do(ctx, dark(false))
		}
	}
}

// shootSizes saves the page at desktop and phone width.
func shootSizes(t *testing.T, ctx context.Context, dir, name string) {
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
	desktop(ctx)
}

// desktop brings the tab back to the desktop size the browser starts at:
// clearing an emulated phone alone leaves the phone's width in place, and
// the inbox shows only its list at that width.
func desktop(ctx context.Context) {
	_ = chromedp.Do(ctx, chromedp.EmulateReset(), chromedp.EmulateViewport(1280, 900))
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

type gateResult = testenv.GateResult

var gate = testenv.GateAsync

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

// waitURL waits until the tab's address contains part, riding out the
// navigation in between.
func waitURL(t *testing.T, ctx context.Context, part string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err == nil && strings.Contains(loc, part) {
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.readyState === 'complete'`)); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not reach an address with %q (at %q)", part, loc)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cardFor waits for the inbox card of the call's pending item and returns
// its selector, once htmx has wired it up (a person can't click sooner).
func cardFor(t *testing.T, ctx context.Context, e *testenv.Env, callID string) string {
	t.Helper()
	var id string
	deadline := time.Now().Add(10 * time.Second)
	for e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE call_id = $1`, callID).Scan(&id) != nil {
		if time.Now().After(deadline) {
			t.Fatal("no pending item for", callID)
		}
		time.Sleep(5 * time.Millisecond)
	}
	sel := `li[data-approval-id="` + id + `"]`
	// A card that arrives while another is being read waits behind the
	// "N new — show" bar (the list stays still): show it.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.querySelector('`+sel+`')`)); err != nil {
		t.Fatal("card did not arrive:", err)
	}
	// The bar may still be laid out when the card lands behind it: press it
	// once it has a size (a person can't press it sooner either).
	showNew := `(() => {
		if (!document.querySelector('#pending-new ` + sel + `')) return true;
		const bar = document.querySelector('[data-new-bar]'), b = document.querySelector('[data-testid="show-new"]');
		if (!bar || bar.hidden) return true;
		if (!b || b.getBoundingClientRect().height === 0) return false;
		b.click();
		return true;
	})()`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](showNew)); err != nil {
		t.Fatal("show new:", err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatal("card did not appear:", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!document.querySelector('`+sel+`').classList.contains('htmx-added')`)); err != nil {
		t.Fatal(err)
	}
	return sel
}
