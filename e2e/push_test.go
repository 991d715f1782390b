package e2e

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// beforeScripts runs js in every document of the tab before the page's
// own scripts, to stand in for browser features a headless browser lacks.
func beforeScripts(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: js}); err != nil {
		t.Fatal(err)
	}
}

// settingsTab signs the member in, installs stubs (if any) and opens
// /settings.
func settingsTab(t *testing.T, e *testenv.Env, stubs string) context.Context {
	t.Helper()
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	if stubs != "" {
		beforeScripts(t, ctx, stubs)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/settings"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="push-settings"]`))); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// visibleState names the push state line shown: "" for none, "several"
// when more than one is.
const visibleState = `(() => { const v = [...document.querySelectorAll('[data-push-state]')].filter(el => !el.hidden); return v.length === 1 ? v[0].dataset.pushState : v.length === 0 ? '' : 'several'; })()`

const buttonShown = `!document.querySelector('[data-testid="push-enable"]').hidden`

func clickEnable(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="push-enable"]`))); err != nil {
		t.Fatal(err)
	}
}

// fakePush stands in for a push service: headless Chromium has the Push
// API but no push service to subscribe with, so subscribe() returns a
// subscription with real keys, remembered for the tab's session.
// Notification.requestPermission grants and counts its calls.
func fakePush(t *testing.T) string {
	t.Helper()
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return `(() => {
  const sub = { endpoint: 'https://push.example.net/e2e-device', toJSON() { return { endpoint: this.endpoint, expirationTime: null,
    keys: { p256dh: '` + enc(priv.PublicKey().Bytes()) + `', auth: '` + enc(auth) + `' } }; } };
  Object.defineProperty(Notification, 'permission', { configurable: true, get: () => sessionStorage.getItem('perm') || 'default' });
  Notification.requestPermission = () => { sessionStorage.setItem('asked', String(Number(sessionStorage.getItem('asked') || 0) + 1));
    sessionStorage.setItem('perm', 'granted'); return Promise.resolve('granted'); };
  PushManager.prototype.subscribe = function (opts) { sessionStorage.setItem('keylen', String(opts.applicationServerKey.byteLength));
    sessionStorage.setItem('subscribed', '1'); return Promise.resolve(sub); };
  PushManager.prototype.getSubscription = function () { return Promise.resolve(sessionStorage.getItem('subscribed') ? sub : null); };
})();`
}

// acrossReload polls js like until, through a reload of the page (an
// evaluation cut short by the navigation is tried again).
func acrossReload(t *testing.T, ctx context.Context, js, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPushDevices(t *testing.T) {
	e := testenv.NewEnv(t)

	// Headless Chromium registers the real service worker from /sw.js with
	// the whole app as its scope (the CSP allows it as a worker), and
	// offers the button; its real permission prompt answers "denied",
	// which the page then says.
	t.Run("ServiceWorkerAndDenied", func(t *testing.T) {
		ctx := settingsTab(t, e, "")
		eval[bool](t, ctx, `(navigator.serviceWorker.ready.then(r => { window.__sw = r.scope + ' ' + (r.active ? r.active.scriptURL : ''); }), true)`)
		until(t, ctx, `window.__sw === '`+e.BaseURL+`/ `+e.BaseURL+`/sw.js'`, "the service worker was not registered for the app's scope")
		until(t, ctx, buttonShown, "no button to turn push on")
		if s := eval[string](t, ctx, visibleState); s != "" {
			t.Fatalf("state %q before any click", s)
		}
		if p := eval[string](t, ctx, `Notification.permission`); p != "default" {
			t.Fatalf("permission %q: asked without a click", p)
		}
		clickEnable(t, ctx)
		until(t, ctx, visibleState+` === 'denied'`, "the denied permission is not said")
		if eval[bool](t, ctx, buttonShown) {
			t.Fatal("the button stays while notifications are blocked")
		}
	})

	t.Run("Subscribe", func(t *testing.T) {
		ctx := settingsTab(t, e, fakePush(t))
		until(t, ctx, buttonShown, "no button to turn push on")
		if eval[string](t, ctx, `sessionStorage.getItem('asked') || '0'`) != "0" {
			t.Fatal("permission asked before the click")
		}
		clickEnable(t, ctx)
		// The page reloads with the device listed and marked as this one.
		acrossReload(t, ctx, visibleState+` === 'on' && document.querySelectorAll('[data-testid="push-device"]').length === 1`, "the device is not listed as on")
		until(t, ctx, `!document.querySelector('[data-push-this]').hidden`, "the row is not marked as this browser")
		screenshot(t, ctx, "settings-push")
		if eval[string](t, ctx, `sessionStorage.getItem('keylen')`) != "65" {
			t.Fatal("subscribed without the server's 65-byte VAPID public key")
		}
		subs, err := e.DB.PushSubscriptionsOf(t.Context(), dev.DemoMember.Subject)
		if err != nil || len(subs) != 1 || subs[0].Endpoint != "https://push.example.net/e2e-device" || !strings.Contains(subs[0].DeviceName, "Chrome") {
			t.Fatalf("stored %+v %v", subs, err)
		}
		// Removing it lists no device.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="push-device"] button`))); err != nil {
			t.Fatal(err)
		}
		acrossReload(t, ctx, `document.querySelector('[data-testid="push-no-devices"]') !== null`, "the device was not removed")
	})

	t.Run("Unsupported", func(t *testing.T) {
		ctx := settingsTab(t, e, `delete window.PushManager;`)
		until(t, ctx, visibleState+` === 'unsupported'`, "an unsupported browser is not said")
		if eval[bool](t, ctx, buttonShown) {
			t.Fatal("a button in an unsupported browser")
		}
	})

	// A page over plain http on a public host is not a secure context; the
	// test server is on 127.0.0.1 (secure), so the flag is overridden.
	t.Run("Insecure", func(t *testing.T) {
		ctx := settingsTab(t, e, `Object.defineProperty(window, 'isSecureContext', { value: false });`)
		until(t, ctx, visibleState+` === 'insecure'`, "the need for https is not said")
		if eval[bool](t, ctx, buttonShown) {
			t.Fatal("a button without a secure context")
		}
	})
}
