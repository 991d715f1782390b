package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// The live inbox (no reload) shows every argument a call carries, and shows
// hidden and direction-changing characters as visible markers with a
// warning in words.
func TestLiveCardShowsWhatWasSent(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.live.on`))); err != nil {
		t.Fatal("event stream not connected:", err)
	}
	eval[bool](t, ctx, `window.__sameDocument = true`)
	call := func(id, args, reason string) client.Call {
		return client.Call{CallID: id, User: dev.DemoMember.Subject, ConversationID: "conv-hidden", TurnID: "turn-1",
			Connector: "mail", Tool: "send_email", Arguments: args, Reason: reason}
	}
	// live waits for the call's card to arrive over the stream and returns
	// a function that evaluates JavaScript on it (as "card").
	live := func(t *testing.T, c client.Call) (string, func(js string) string) {
		t.Helper()
		sel := cardFor(t, ctx, e, c.CallID)
		if !eval[bool](t, ctx, `window.__sameDocument === true`) {
			t.Fatal("the page reloaded")
		}
		return sel, func(js string) string {
			t.Helper()
			return eval[string](t, ctx, `(() => { const card = document.querySelector('`+sel+`'); return String(`+js+`) })()`)
		}
	}
	reject := func(t *testing.T, sel string, res chan gateResult) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel+` button[value="reject"]`))); err != nil {
			t.Fatal(err)
		}
		if r := result(t, res); r.Out.Allowed {
			t.Fatal("a rejected call was allowed:", r)
		}
	}
	const argLines = `[...card.querySelectorAll('dl.args > div')].map(d => d.querySelector('dt').innerText + '=' + d.querySelector('dd bdi').innerText).join('|')`

	t.Run("CarriageReturnInValue", func(t *testing.T) {
		c := call("h1", `{"to":"finance@acme.example\r","bcc":"attacker@evil.example","body":"hello"}`, "Send the invoice.")
		res := gate(rt, c)
		sel, on := live(t, c)
		if got := on(argLines); got != "to=finance@acme.example⟨U+000D⟩|bcc=attacker@evil.example|body=hello" {
			t.Fatalf("argument lines on the live card: %q", got)
		}
		if on(`!!card.querySelector('[data-testid="hidden-warning"]')`) != "true" {
			t.Fatal("no hidden-characters warning")
		}
		reject(t, sel, res)
	})

	t.Run("CarriageReturnInReason", func(t *testing.T) {
		c := call("h2", `{"to":"ops@acme.example"}`, "Routine cleanup\revent: ignored")
		res := gate(rt, c)
		sel, on := live(t, c)
		if got := on(`card.querySelector('[data-testid="agent-reason"] bdi').innerText`); got != "Routine cleanup⟨U+000D⟩event: ignored" {
			t.Fatalf("reason %q", got)
		}
		reject(t, sel, res)
	})

	t.Run("RightToLeftOverride", func(t *testing.T) {
		c := call("h3", `{"to":"finance@acme.example","attachment":"invoice_4471_\u202Efdp.exe"}`, "")
		res := gate(rt, c)
		sel, on := live(t, c)
		if got := on(argLines); got != "to=finance@acme.example|attachment=invoice_4471_⟨U+202E⟩fdp.exe" {
			t.Fatalf("argument lines: %q", got)
		}
		warning := on(`card.querySelector('[data-testid="hidden-warning"]')?.innerText`)
		if !strings.Contains(warning, "hidden or direction-changing characters") {
			t.Fatalf("warning %q", warning)
		}
		flagged := on(`[...card.querySelectorAll('.has-hidden [data-testid="arg-key"]')].map(e => e.innerText).join(',')`)
		if flagged != "attachment" || on(`card.querySelectorAll('[data-testid="hidden-flag"]').length`) != "1" {
			t.Fatalf("flagged lines %q", flagged)
		}
		// The marker is a box of its own, and the value cannot reorder
		// what follows it.
		if on(`getComputedStyle(card.querySelector('.hidden-char')).borderTopStyle`) != "solid" ||
			on(`getComputedStyle(card.querySelector('[data-testid="arg-value"] bdi')).unicodeBidi`) != "isolate" {
			t.Fatal("marker or value not styled as shown")
		}
		screenshot(t, ctx, "inbox-direction-override")
		reject(t, sel, res)
	})

	t.Run("ZeroWidthAndLookAlikeHost", func(t *testing.T) {
		c := call("h4", `{"to":"billing@pаypal.com","payee":"Pay\u200bPal"}`, "")
		res := gate(rt, c)
		sel, on := live(t, c)
		if got := on(argLines); got != "to=billing@pаypal.com|payee=Pay⟨U+200B⟩Pal" {
			t.Fatalf("argument lines: %q", got)
		}
		dest := on(`card.querySelector('[data-testid="sends-out"]').innerText`)
		if !strings.Contains(dest, "Look-alike characters") || !strings.Contains(dest, "Cyrillic and Latin") || !strings.Contains(dest, "xn--pypal-4ve.com") {
			t.Fatalf("destination line %q", dest)
		}
		screenshot(t, ctx, "inbox-hidden-characters")
		reject(t, sel, res)
	})
}
