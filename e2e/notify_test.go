package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/internal/testenv"
)

// fake replaces the page's Notification API with one that records what it
// is asked (the permission starts as given; a request answers answer), and
// tells the page, as a browser does when its settings change while the tab
// is in the background.
func fake(t *testing.T, ctx context.Context, permission, answer string) {
	t.Helper()
	eval[bool](t, ctx, `(() => {
  const rec = { asked: 0, shown: [] };
  window.__notify = rec;
  function N(title, opts) { rec.shown.push({ title: title, body: (opts || {}).body || '', tag: (opts || {}).tag || '' }); this.close = function () {}; }
  N.permission = '`+permission+`';
  N.requestPermission = function () { rec.asked++; N.permission = '`+answer+`'; return Promise.resolve(N.permission); };
  if ('`+permission+`' === 'missing') { delete window.Notification; } else { window.Notification = N; }
  document.hasFocus = function () { return false; };
  window.dispatchEvent(new Event('focus'));
  return true;
})()`)
}

func TestDesktopNotifications(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)

	t.Run("AskedOnlyAfterTheClick", func(t *testing.T) {
		ctx := newTab(t)
		signIn(t, ctx, e, "member")
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.live.on`))); err != nil {
			t.Fatal(err)
		}
		if got := eval[string](t, ctx, `Notification.permission`); got != "default" {
			t.Fatalf("permission %q after the page loaded: asked without a click", got)
		}
		fake(t, ctx, "default", "granted")
		if eval[int](t, ctx, `window.__notify.asked`) != 0 || eval[bool](t, ctx, `document.querySelector('[data-testid="notify"]').hidden`) {
			t.Fatal("asked before the click, or no button")
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="notify"]`))); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, `document.querySelector('[data-testid="notify"]').textContent === 'Notifications on'`, "the button did not turn on")
		if eval[int](t, ctx, `window.__notify.asked`) != 1 || eval[string](t, ctx, `localStorage.getItem('countersign.notify')`) != "on" {
			t.Fatal("the choice was not asked for once, or not remembered")
		}
		c := memberCall("notify-1", "mail", "send_email", `{"to":"secret-recipient@acme.example","subject":"Salary review"}`)
		res := gate(rt, c)
		id := approvalID(t, e, c.CallID)
		until(t, ctx, `window.__notify.shown.length === 1`, "no notification for the new call")
		shown := eval[map[string]string](t, ctx, `window.__notify.shown[0]`)
		all := shown["title"] + " " + shown["body"]
		if !strings.Contains(all, "Send email") || !strings.Contains(all, "Mail") || shown["tag"] != "countersign-"+id {
			t.Fatalf("notification %v", shown)
		}
		if strings.Contains(all, "secret-recipient") || strings.Contains(all, "Salary") {
			t.Fatalf("an argument value in the notification: %v", shown)
		}
		// Remembered across pages; a second click turns it off.
		if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/auto-approve")); err != nil {
			t.Fatal(err)
		}
		waitURL(t, ctx, "/auto-approve")
		fake(t, ctx, "granted", "granted")
		until(t, ctx, `document.querySelector('[data-testid="notify"]').textContent === 'Notifications on'`, "the choice was not remembered")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="notify"]`))); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, `document.querySelector('[data-testid="notify"]').textContent === 'Notify me' && localStorage.getItem('countersign.notify') === 'off'`, "did not turn off")
		openRequest(t, ctx, e, id)
		_ = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#approval-page button[value="reject"]`)))
		result(t, res)
	})

	t.Run("DeniedHidesTheButton", func(t *testing.T) {
		ctx := newTab(t)
		signIn(t, ctx, e, "member")
		fake(t, ctx, "denied", "denied")
		until(t, ctx, `document.querySelector('[data-testid="notify"]').hidden && !document.querySelector('[data-testid="notify-note"]').hidden`, "the button shows though notifications are blocked")
		if got := text(t, ctx, `[data-testid="notify-note"]`); !strings.Contains(got, "blocked") {
			t.Fatalf("note %q", got)
		}
	})

	t.Run("MissingHidesTheButton", func(t *testing.T) {
		ctx := newTab(t)
		signIn(t, ctx, e, "member")
		fake(t, ctx, "missing", "")
		until(t, ctx, `document.querySelector('[data-testid="notify"]').hidden && !document.querySelector('[data-testid="notify-note"]').hidden`, "the button shows without the API")
	})
}
