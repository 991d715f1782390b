package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// press sends keys one at a time to the focused element and counts them.
func press(t *testing.T, ctx context.Context, count *int, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(k)); err != nil {
			t.Fatalf("press %q: %v", k, err)
		}
		*count++
	}
}

// keysCall is a short calendar call (nothing folded) in its own turn.
func keysCall(n int) client.Call {
	return client.Call{CallID: fmt.Sprintf("keys-%d", n), User: dev.DemoMember.Subject, ConversationID: "conv-keys", TurnID: fmt.Sprintf("turn-%d", n),
		Connector: "calendar", Tool: "create_event", Arguments: fmt.Sprintf(`{"title":"Review %d","start":"2026-12-0%dT10:00:00Z"}`, n, n)}
}

// waitInbox opens the inbox and waits until its stream is live.
func waitInbox(t *testing.T, ctx context.Context, e *testenv.Env, cards int) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, fmt.Sprintf(`document.querySelectorAll('#pending-list > li[data-approval-id]').length === %d && !!document.querySelector('.live.on')`, cards), "the inbox did not show the calls")
}

func TestInboxKeys(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")

	results := make([]chan gateResult, 8)
	for i := range results {
		results[i] = gate(rt, keysCall(i+1))
		// One at a time, so that they expire, and are listed, in this order.
		approvalID(t, e, keysCall(i+1).CallID)
	}
	waitInbox(t, ctx, e, 8)
	if got := text(t, ctx, `[data-testid="inbox-count"]`); got != "8 waiting" {
		t.Fatalf("heading count %q", got)
	}

	t.Run("ApproveThirdRejectFifth", func(t *testing.T) {
		n := 0
		press(t, ctx, &n, "j", "j", "j")
		if got := eval[string](t, ctx, `document.querySelector('li.is-selected [data-testid="arg-value"]').textContent`); got != "Review 3" {
			t.Fatalf("selected %q, want the third call", got)
		}
		time.Sleep(600 * time.Millisecond)
		press(t, ctx, &n, "a")
		if r := result(t, results[2]); !r.Out.Allowed {
			t.Fatal("the third call was not approved:", r)
		}
		if n > 8 {
			t.Fatalf("approving took %d key presses", n)
		}
		until(t, ctx, `!document.querySelector('li[data-approval-id] form.htmx-request') && !!document.querySelector('[data-testid="decided-card"]')`, "the card did not show the decision")

		n = 0
		press(t, ctx, &n, "j")
		if got := eval[string](t, ctx, `document.querySelector('li.is-selected [data-testid="arg-value"]').textContent`); got != "Review 5" {
			t.Fatalf("selected %q, want the fifth call", got)
		}
		press(t, ctx, &n, "r")
		if !eval[bool](t, ctx, `document.activeElement.matches('li.is-selected textarea[data-reason]')`) {
			t.Fatal("r did not move focus to the reason box")
		}
		// The reason's letters are typed, not keys: "a" here types "a".
		if err := chromedp.Do(ctx, chromedp.KeyEvent("Not a good time")); err != nil {
			t.Fatal(err)
		}
		press(t, ctx, &n, kb.Enter)
		r := result(t, results[4])
		if r.Out.Allowed || !strings.Contains(r.Out.Message, "Not a good time") {
			t.Fatal("the fifth call was not rejected with the reason:", r)
		}
		if n > 8 {
			t.Fatalf("rejecting took %d key presses", n)
		}
		for _, i := range []int{1, 2, 4, 6, 7, 8} {
			if s := statusOf(t, e, keysCall(i).CallID); s != "pending" {
				t.Fatalf("call %d is %s", i, s)
			}
		}
	})

	t.Run("ATypedInTheReasonBox", func(t *testing.T) {
		sel := `#pending-list li[data-approval-id]:first-child`
		if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(sel+` textarea[data-reason]`)), chromedp.KeyEvent("a")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if got := eval[string](t, ctx, `document.querySelector('`+sel+` textarea[data-reason]').value`); got != "a" {
			t.Fatalf("the reason box holds %q", got)
		}
		if s := statusOf(t, e, keysCall(1).CallID); s != "pending" {
			t.Fatal("a in the reason box decided:", s)
		}
		eval[bool](t, ctx, `(document.querySelector('`+sel+` textarea[data-reason]').value = '', document.activeElement.blur(), true)`)
	})

	t.Run("ATooSoon", func(t *testing.T) {
		n := 0
		press(t, ctx, &n, "k", "a")
		until(t, ctx, `(document.querySelector('[data-testid="keys-status"]') || {}).textContent.includes('wait a moment')`, "a pressed at once did not say why")
		time.Sleep(300 * time.Millisecond)
		for _, i := range []int{1, 2, 4, 6, 7, 8} {
			if s := statusOf(t, e, keysCall(i).CallID); s != "pending" {
				t.Fatalf("call %d is %s", i, s)
			}
		}
	})

	t.Run("AOnFoldedCall", func(t *testing.T) {
		long := `{"command":"` + longCommand() + `"}`
		c := client.Call{CallID: "keys-folded", User: dev.DemoMember.Subject, ConversationID: "conv-keys", TurnID: "turn-f",
			Connector: "system", Tool: "run_command", Arguments: long}
		res := gate(rt, c)
		approvalID(t, e, c.CallID)
		waitInbox(t, ctx, e, 7)
		if !eval[bool](t, ctx, `!!document.querySelector('#pending-list li[data-approval-id]:last-child [data-testid="fold"] [data-expand]')`) {
			t.Fatal("the long call is not folded")
		}
		n := 0
		for i := 0; i < 7; i++ {
			press(t, ctx, &n, "j")
		}
		time.Sleep(600 * time.Millisecond)
		press(t, ctx, &n, "a")
		until(t, ctx, `(document.querySelector('[data-testid="keys-status"]') || {}).textContent.includes('folded')`, "a on a folded call did not say why")
		time.Sleep(300 * time.Millisecond)
		if s := statusOf(t, e, c.CallID); s != "pending" {
			t.Fatal("a approved a folded call:", s)
		}
		_ = res
	})

	t.Run("XSelectsForABatch", func(t *testing.T) {
		n := 0
		press(t, ctx, &n, "k", "x")
		until(t, ctx, `document.querySelectorAll('#pending-rows input[data-batch-pick]:checked').length === 1 && !document.querySelector('[data-testid="batch-bar"]').hidden`, "x did not select the call for a batch")
		if !eval[bool](t, ctx, `document.querySelector('#pending-rows li.is-selected input[data-batch-pick]').checked`) {
			t.Fatal("x selected another call than the one selected")
		}
		press(t, ctx, &n, "x")
		until(t, ctx, `document.querySelectorAll('#pending-rows input[data-batch-pick]:checked').length === 0`, "x again did not unselect it")
	})

	t.Run("HelpLists", func(t *testing.T) {
		n := 0
		press(t, ctx, &n, "?")
		until(t, ctx, `!!document.querySelector('dialog[data-testid="keys-help"][open]')`, "? did not list the keys")
		if got := text(t, ctx, `dialog[data-testid="keys-help"] dl`); !strings.Contains(got, "approve once") || !strings.Contains(got, "select for a batch") {
			t.Fatalf("help lists %q", got)
		}
		press(t, ctx, &n, kb.Escape)
		until(t, ctx, `!document.querySelector('dialog[data-testid="keys-help"][open]')`, "Escape did not close the list")
	})
	checkAxe(t, ctx, "inbox with keys")
}

// TestDecisionLayout checks the one layout of the buttons: Approve and
// Reject side by side before the reason and the standing options, on the
// card and on a phone's request page; the reason box never leads to
// Approve.
func TestDecisionLayout(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	body := strings.Repeat("The quarterly figures are attached for your review before Friday. ", 60)
	c := memberCall("layout-1", "mail", "send_email", `{"to":"finance@acme.example","subject":"Q4","body":"`+body+`"}`)
	res := gate(rt, c)
	// One after the other, so that the mail expires, and is listed, first.
	approvalID(t, e, c.CallID)
	cal := memberCall("layout-2", "calendar", "create_event", `{"title":"Offsite"}`)
	resCal := gate(rt, cal)
	approvalID(t, e, cal.CallID)
	waitInbox(t, ctx, e, 2)

	t.Run("FocusOrder", func(t *testing.T) {
		// In document (and so Tab) order: the call, Approve, Reject, the
		// reason, the standing options.
		order := eval[string](t, ctx, `(() => {
			const li = document.querySelector('#pending-list li[data-approval-id]:last-child');
			return Array.from(li.querySelectorAll('.card-link, button[name="decision"], textarea[data-reason], select[data-duration]'))
				.map(el => el.matches('.card-link') ? 'call' : (el.name === 'decision' ? el.value : el.tagName.toLowerCase())).join(',');
		})()`)
		if order != "call,approve,reject,textarea,select,approve_conversation,always,always_matching" {
			t.Fatalf("focus order %q", order)
		}
		// Approve and Reject side by side, in one row.
		if !eval[bool](t, ctx, `(() => { const f = document.querySelector('#pending-list form.decide');
			const a = f.querySelector('button[value="approve"]').getBoundingClientRect(), r = f.querySelector('button[value="reject"]').getBoundingClientRect();
			return Math.abs(a.top - r.top) < 2 && r.left > a.right; })()`) {
			t.Fatal("Approve and Reject are not side by side")
		}
	})

	t.Run("ReasonTabEnterNeverApproves", func(t *testing.T) {
		sel := `li[data-approval-id]:has(textarea[data-reason]):last-child`
		if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`#pending-list `+sel+` textarea`)), chromedp.KeyEvent("Not now"),
			chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Enter)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(800 * time.Millisecond)
		if s := statusOf(t, e, cal.CallID); s != "pending" {
			t.Fatal("reason, Tab, Enter decided the call:", s)
		}
		// The typed-reason question: its prominent answer is the safe one.
		waitInbox(t, ctx, e, 2)
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#pending-list li[data-approval-id]:last-child textarea`), "Not now"),
			chromedp.Click(chromedp.CSS(`#pending-list li[data-approval-id]:last-child button[value="approve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm-reject"]`))); err != nil {
			t.Fatal(err)
		}
		if !eval[bool](t, ctx, `document.querySelector('[data-testid="confirm-reject"]').classList.contains('btn-danger-solid') &&
			!document.querySelector('[data-testid="confirm-keep"]').matches('.btn-primary, .btn-danger-solid') &&
			document.activeElement === document.querySelector('[data-testid="confirm-cancel"]')`) {
			t.Fatal("the typed-reason dialog makes approving its prominent answer")
		}
		eval[bool](t, ctx, `(document.querySelector('dialog[open]').close(), true)`)
	})

	t.Run("PhoneActionBar", func(t *testing.T) {
		id := approvalID(t, e, c.CallID)
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
			t.Fatal(err)
		}
		openRequest(t, ctx, e, id)
		if h := eval[float64](t, ctx, `document.documentElement.scrollHeight`); h < 1200 {
			t.Fatalf("the request page is %v px tall: too short to test the bar", h)
		}
		for _, b := range []string{"approve", "reject"} {
			if !eval[bool](t, ctx, `(() => { const el = document.querySelector('#approval-page button[value="`+b+`"]'); const r = el.getBoundingClientRect();
				return r.top >= 0 && r.bottom <= innerHeight && r.width > 0 && document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) === el; })()`) {
				t.Fatalf("%s is not visible without scrolling on a phone", b)
			}
		}
		shot(t, ctx, "act-request-phone")
		checkAxe(t, ctx, "request page on a phone")
		if err := chromedp.Do(ctx, dark(true)); err != nil {
			t.Fatal(err)
		}
		checkAxe(t, ctx, "request page on a phone, dark")
		shot(t, ctx, "act-request-phone-dark")
		_ = chromedp.Do(ctx, dark(false))
		desktop(ctx)
	})

	t.Run("AWaitsForTheWholeCall", func(t *testing.T) {
		waitInbox(t, ctx, e, 2)
		n := 0
		press(t, ctx, &n, "j")
		if got := text(t, ctx, `#pending-list li.is-selected [data-testid="tool-name"]`); got != "Send email" {
			t.Fatalf("selected %q", got)
		}
		if eval[bool](t, ctx, `document.querySelector('#pending-list li.is-selected form.decide').getBoundingClientRect().top <= innerHeight`) {
			t.Fatal("the card fits the screen: it cannot show the rule")
		}
		time.Sleep(600 * time.Millisecond)
		press(t, ctx, &n, "a")
		until(t, ctx, `(document.querySelector('[data-testid="keys-status"]') || {}).textContent.includes('has not been on screen')`, "a on a call not read to its end did not say why")
		time.Sleep(300 * time.Millisecond)
		if s := statusOf(t, e, c.CallID); s != "pending" {
			t.Fatal("a approved a call not read to its end:", s)
		}
		// Read on to the end of the call: now a approves it.
		eval[bool](t, ctx, `(document.querySelector('#pending-list li.is-selected form.decide').scrollIntoView({block: 'center'}), true)`)
		time.Sleep(100 * time.Millisecond)
		press(t, ctx, &n, "a")
		if r := result(t, res); !r.Out.Allowed {
			t.Fatal("a did not approve the call read to its end:", r)
		}
	})
	_ = resCal
}

// shot saves what the viewport shows as name.png when COUNTERSIGN_SHOTS
// names a folder.
func shot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("COUNTERSIGN_SHOTS")
	if dir == "" {
		return
	}
	time.Sleep(200 * time.Millisecond)
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
}
