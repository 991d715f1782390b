package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// htmxErrorsToConsole reports every htmx error event (a swap with no
// target, a failed response, a broken swap…) as a console error, so that
// an error htmx only signals as an event is seen too.
const htmxErrorsToConsole = `document.addEventListener('htmx:error', e => {
	const info = (e.detail && e.detail.errorInfo) || {};
	console.error('htmx error event ' + (info.error || '') + ' on ' + ((info.elt && info.elt.outerHTML) || '').slice(0, 120));
}, true);`

// consoleErrors gathers the console errors, uncaught exceptions and htmx
// error events of one tab.
type consoleErrors struct {
	ctx  context.Context
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

// watchConsole starts gathering the errors of the tab in ctx.
func watchConsole(t *testing.T, ctx context.Context) *consoleErrors {
	t.Helper()
	c := &consoleErrors{ctx: ctx}
	msgs := chromedp.Console(ctx)
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tgt *chromedp.Target) error {
		_, err := cdp.Call(ctx, tgt, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: htmxErrorsToConsole})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				c.mu.Lock()
				c.msgs = append(c.msgs, m)
				c.mu.Unlock()
			}
		}
	}()
	return c
}

// take returns the errors gathered since the last take. A page that
// answers with its own status (a form sent again with its message, 422; the
// not-found page, 404) makes the browser log that status; that is the page
// working, not an error, and is left out.
func (c *consoleErrors) take(t *testing.T) []string {
	t.Helper()
	c.mu.Lock()
	msgs := c.msgs
	c.msgs = nil
	c.mu.Unlock()
	var out []string
	for _, m := range msgs {
		if m.Source == "network" && m.URL == eval[string](t, c.ctx, `location.href`) && eval[bool](t, c.ctx, `!!document.querySelector('main h1')`) {
			continue
		}
		out = append(out, m.String()+" ("+m.URL+")")
	}
	return out
}

// TestNoConsoleErrors walks every screen and fails on any console error,
// uncaught exception or htmx error event, live updates included.
func TestNoConsoleErrors(t *testing.T) {
	// The sweep sees what it should: an htmx swap with nowhere to go.
	probe := newTab(t)
	probeLog := watchConsole(t, probe)
	e := testenv.NewEnv(t)
	signIn(t, probe, e, "member")
	eval[bool](t, probe, `(htmx.swap(document.body, '<div id="no-such-target" hx-swap-oob="true">x</div>', {swapStyle: 'beforeend'}), true)`)
	until(t, probe, `true`, "")
	if msgs := probeLog.take(t); !strings.Contains(strings.Join(msgs, "\n"), "oobErrorNoTarget") {
		t.Fatalf("an out-of-band swap with no target was not seen as an error: %q", msgs)
	}

	var tabs []*consoleErrors
	walkEveryScreen(t, e, func() context.Context {
		ctx := newTabFor(t, 4*time.Minute)
		tabs = append(tabs, watchConsole(t, ctx))
		return ctx
	}, func(ctx context.Context, name string) {
		t.Helper()
		// Give late scripts and live updates a moment to speak up.
		if err := chromedp.Do(ctx, chromedp.Sleep(300e6)); err != nil {
			t.Fatal(err)
		}
		for _, c := range tabs {
			for _, m := range c.take(t) {
				t.Errorf("%s: %s", name, m)
			}
		}
	})
}

// TestNoConsoleErrorsLive keeps the inbox and a request page open while
// calls arrive, are decided on the card, elsewhere, expire and are
// cancelled: no console error and no htmx error event, on a desktop or a
// phone.
func TestNoConsoleErrorsLive(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	bg := context.Background()
	inbox := newTab(t)
	inboxLog := watchConsole(t, inbox)
	signIn(t, inbox, e, "member")
	other := e.NewBrowser()
	other.T = t
	other.SignIn("member")
	settle := func(what string) {
		t.Helper()
		if err := chromedp.Do(inbox, chromedp.Sleep(800e6)); err != nil {
			t.Fatal(err)
		}
		for _, m := range inboxLog.take(t) {
			t.Errorf("%s: %s", what, m)
		}
	}
	for i, width := range []int64{1280, 390} {
		if width == 390 {
			if err := chromedp.Do(inbox, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
				t.Fatal(err)
			}
		}
		if err := chromedp.Do(inbox, chromedp.Navigate(e.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(`h1`))); err != nil {
			t.Fatal(err)
		}
		prefix := fmt.Sprintf("w%d-", i)
		calls := map[string]chan gateResult{}
		arrive := func(id string) {
			c := memberCall(prefix+id, "files", "delete_file", `{"path":"/reports/`+id+`.xlsx"}`)
			c.TurnID = prefix + id
			calls[id] = gate(rt, c)
			approvalID(t, e, c.CallID)
		}
		// Alone in the list, so that its card is the one shown.
		arrive("card")
		settle(fmt.Sprintf("%d px: a call arrives", width))
		if width == 1280 {
			sel := cardFor(t, inbox, e, prefix+"card")
			if err := chromedp.Do(inbox, chromedp.Click(chromedp.CSS(sel+` button[value="approve"]`))); err != nil {
				t.Fatal(err)
			}
			result(t, calls["card"])
			settle("decided on the card")
		} else {
			id := approvalID(t, e, prefix+"card")
			if resp, _ := other.PostForm("/approvals/"+id+"/decision", map[string][]string{"decision": {"approve"}}); resp.StatusCode != 303 {
				t.Fatal(resp.StatusCode)
			}
			result(t, calls["card"])
		}
		for _, id := range []string{"elsewhere", "late", "cancel"} {
			arrive(id)
		}
		settle(fmt.Sprintf("%d px: calls arrive", width))
		id := approvalID(t, e, prefix+"elsewhere")
		if resp, _ := other.PostForm("/approvals/"+id+"/decision", map[string][]string{"decision": {"reject"}, "reason": {"Not now"}}); resp.StatusCode != 303 {
			t.Fatal(resp.StatusCode)
		}
		result(t, calls["elsewhere"])
		settle(fmt.Sprintf("%d px: decided elsewhere", width))
		late := approvalID(t, e, prefix+"late")
		if _, err := e.DB.Pool.Exec(bg, `UPDATE approvals SET expires_at = now() WHERE id = $1`, late); err != nil {
			t.Fatal(err)
		}
		if _, err := e.DB.ExpireDue(bg, 10); err != nil {
			t.Fatal(err)
		}
		result(t, calls["late"])
		settle(fmt.Sprintf("%d px: expired", width))
		if _, err := rt.CancelTurn(bg, dev.DemoMember.Subject, "conv-page", prefix+"cancel"); err != nil {
			t.Fatal(err)
		}
		result(t, calls["cancel"])
		settle(fmt.Sprintf("%d px: cancelled", width))
	}
	desktop(inbox)

	// A request page open while its call is decided elsewhere.
	c := memberCall("page", "mail", "send_email", `{"to":"finance@acme.example"}`)
	res := gate(rt, c)
	id := approvalID(t, e, c.CallID)
	openRequest(t, inbox, e, id)
	if resp, _ := other.PostForm("/approvals/"+id+"/decision", map[string][]string{"decision": {"reject"}, "reason": {"Later"}}); resp.StatusCode != 303 {
		t.Fatal(resp.StatusCode)
	}
	result(t, res)
	until(t, inbox, `!!document.querySelector('[data-testid="outcome-label"]')`, "no outcome")
	settle("request page decided elsewhere")
}
