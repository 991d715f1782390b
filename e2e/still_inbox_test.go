package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// The inbox stays still while a person reads it: a new call waits in an
// "N new — show" bar instead of moving the card under the pointer; decided
// cards fold away; a shortened value expands in place; a standing approval
// of a tool that sends data out is confirmed in a dialog, with its length.
func TestStillInbox(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	s := &stillInbox{e: e, rt: rt, ctx: ctx}
	signIn(t, ctx, e, "member")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.live.on`))); err != nil {
		t.Fatal("event stream not connected:", err)
	}
	t.Run("NewCallsWaitInABar", s.newCallsWaitInABar)
	t.Run("ExpandShortenedValue", s.expandShortenedValue)
	t.Run("StandingApprovalConfirmedWithDuration", s.standingApprovalConfirmedWithDuration)
	t.Run("ReasonWithApprovalAsksFirst", s.reasonWithApprovalAsksFirst)
	t.Run("GrantEnds", s.grantEnds)
}

// stillInbox is the member's signed-in tab and a runtime asking for them,
// shared by TestStillInbox's steps in turn.
type stillInbox struct {
	e   *testenv.Env
	rt  *client.Client
	ctx context.Context
	n   int
}

// call is the next call of the member's conversation.
func (s *stillInbox) call(connector, tool, args string) client.Call {
	s.n++
	return client.Call{CallID: "still-" + itoaE(s.n), User: dev.DemoMember.Subject, ConversationID: "conv-still", TurnID: "turn-1",
		Connector: connector, Tool: tool, Arguments: args}
}

// poll waits until js is true in the tab.
func (s *stillInbox) poll(t *testing.T, js, what string) {
	t.Helper()
	if _, err := chromedp.Run(s.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatal(what+":", err)
	}
}

// firstTop is where the first pending card's top is.
const firstTop = `document.querySelector('#pending-list > li[data-approval-id]').getBoundingClientRect().top`

func (s *stillInbox) newCallsWaitInABar(t *testing.T) {
	e, rt, ctx, call, poll := s.e, s.rt, s.ctx, s.call, s.poll
	a, b := call("mail", "send_email", `{"to":"a@acme.example"}`), call("mail", "send_email", `{"to":"b@acme.example"}`)
	resA := gate(rt, a)
	sel := cardFor(t, ctx, e, a.CallID)
	resB := gate(rt, b)
	poll(t, `!document.querySelector('[data-new-bar]').hidden`, "no bar for the new call")
	before := eval[float64](t, ctx, firstTop)
	if got := text(t, ctx, `[data-testid="show-new"]`); got != "1 new — show" {
		t.Fatalf("bar says %q", got)
	}
	if eval[int](t, ctx, `document.querySelectorAll('#pending-list > li[data-approval-id]').length`) != 1 {
		t.Fatal("the new call went into the list being read")
	}
	c := call("calendar", "create_event", `{"title":"x"}`)
	resC := gate(rt, c)
	poll(t, `document.querySelector('[data-testid="show-new"]').textContent.startsWith('2 new')`, "the bar did not count the second call")
	if after := eval[float64](t, ctx, firstTop); after != before {
		t.Fatalf("the card being read moved from %v to %v", before, after)
	}
	// Keyboard: the bar's button shows them, in expiry order, and focus
	// goes to the first one shown.
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`[data-testid="show-new"]`)), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	poll(t, `document.querySelectorAll('#pending-list > li[data-approval-id]').length === 3 && document.querySelector('[data-new-bar]').hidden`, "the new calls were not shown")
	if !eval[bool](t, ctx, `(() => { const d = [...document.querySelectorAll('#pending-list > li[data-approval-id]')].map(li => li.dataset.expires); return d.every((x, i) => i === 0 || d[i-1] <= x) })()`) {
		t.Fatal("not in expiry order")
	}
	if !eval[bool](t, ctx, `document.activeElement.classList.contains('card-link')`) {
		t.Fatal("focus did not move to the first new card")
	}
	if !strings.Contains(text(t, ctx, sel+` [data-testid="expires"]`), "in ") {
		t.Fatal("expiry not said as a relative time")
	}
	// A decided card folds away after a few seconds; the answer is in the
	// recent decisions.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel+` button[value="approve"]`))); err != nil {
		t.Fatal(err)
	}
	if r := result(t, resA); !r.Out.Allowed {
		t.Fatal(r)
	}
	poll(t, `!!document.querySelector('[data-testid="decided-card"]')`, "no confirmation")
	poll(t, `!document.querySelector('[data-testid="decided-card"]')`, "the decided card stayed")
	// Each by its own card: the first card in the list may still be one
	// whose rejection is on its way (its runtime can hear the answer
	// before the browser has swapped the card).
	for _, x := range []struct {
		call client.Call
		res  chan gateResult
	}{{b, resB}, {c, resC}} {
		reject(t, ctx, cardFor(t, ctx, e, x.call.CallID))
		if got := result(t, x.res); got.Out.Allowed {
			t.Fatal(got)
		}
	}
}

func (s *stillInbox) expandShortenedValue(t *testing.T) {
	e, rt, ctx, call, poll := s.e, s.rt, s.ctx, s.call, s.poll
	long := strings.Repeat("lorem ipsum ", 300) + "THE-MIDDLE " + strings.Repeat("lorem ipsum ", 200) + "THE-END"
	c := call("mail", "send_email", `{"to":"a@acme.example","body":"`+long+`"}`)
	res := gate(rt, c)
	sel := cardFor(t, ctx, e, c.CallID)
	if got := text(t, ctx, sel+` dl.args`); strings.Contains(got, "THE-MIDDLE") || !strings.Contains(got, "THE-END") {
		t.Fatal("the value was not folded, or its end is not shown")
	}
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(sel+` [data-testid="expand"]`)), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	poll(t, `!!document.querySelector('`+sel+` [data-testid="expanded"]')`, "the value did not expand")
	if got := text(t, ctx, sel+` dl.args`); !strings.Contains(got, "THE-END") || !strings.Contains(got, "THE-MIDDLE") || !strings.Contains(got, "Full text, 6018 characters") {
		t.Fatalf("expanded text: %q", got)
	}
	if !eval[bool](t, ctx, `document.activeElement.matches('dd[id^="value-"]')`) {
		t.Fatal("focus did not move to the expanded value")
	}
	reject(t, ctx, sel)
	result(t, res)
}

func (s *stillInbox) standingApprovalConfirmedWithDuration(t *testing.T) {
	e, rt, ctx, call, poll := s.e, s.rt, s.ctx, s.call, s.poll
	c := call("mail", "send_email", `{"to":"a@acme.example"}`)
	res := gate(rt, c)
	sel := cardFor(t, ctx, e, c.CallID)
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(sel+` select[name="duration"]`), "3600")); err != nil {
		t.Fatal(err)
	}
	eval[bool](t, ctx, `document.querySelector('`+sel+` select[name="duration"]').dispatchEvent(new Event('change', {bubbles: true}))`)
	if got := text(t, ctx, sel+` [data-testid="scope-always"]`); !strings.Contains(got, "in every conversation") || !strings.Contains(got, "for 1 hour") {
		t.Fatalf("scope: %q", got)
	}
	always := sel + ` button[value="always"]`
	// Keyboard: Enter on "Always allow" asks first, naming the tool; focus
	// starts on Cancel; Escape closes and returns focus.
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(always)), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	poll(t, `!!document.querySelector('dialog[data-testid="confirm-dialog"][open]')`, "no confirmation")
	if got := text(t, ctx, `#confirm-title`); got != "Always allow: Send email?" {
		t.Fatalf("dialog title %q", got)
	}
	if !eval[bool](t, ctx, `document.activeElement.dataset.testid === 'confirm-cancel' && document.querySelector('dialog[open]').matches(':modal')`) {
		t.Fatal("focus is not on Cancel, or the dialog is not modal")
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	poll(t, `!document.querySelector('dialog[open]')`, "Escape did not close the dialog")
	if !eval[bool](t, ctx, `document.activeElement === document.querySelector('`+always+`')`) {
		t.Fatal("focus did not return to the button")
	}
	if status := statusOf(t, e, c.CallID); status != "pending" {
		t.Fatal("cancelled confirmation decided:", status)
	}
	// A question closed and asked again at once: the first dialog's close
	// event, still queued, must not answer the second question.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(always)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm-standing"]`))); err != nil {
		t.Fatal(err)
	}
	eval[bool](t, ctx, `(document.querySelector('dialog[open]').close(), document.querySelector('`+always+`').click(), true)`)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm-standing"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="confirm-standing"]`))); err != nil {
		t.Fatal(err)
	}
	if r := result(t, res); !r.Out.Allowed || r.Out.Scope != "always" {
		t.Fatal(r)
	}
	var left time.Duration
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT g.expires_at - now() FROM standing_grants g JOIN approvals a ON a.id = g.approval_id WHERE a.call_id = $1`, c.CallID).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left < 59*time.Minute || left > time.Hour {
		t.Fatalf("the grant lasts %v, want the hour chosen", left)
	}
}

func (s *stillInbox) reasonWithApprovalAsksFirst(t *testing.T) {
	e, rt, ctx, call := s.e, s.rt, s.ctx, s.call
	c := call("calendar", "create_event", `{"title":"Offsite"}`)
	c.ConversationID = "conv-other"
	res := gate(rt, c)
	sel := cardFor(t, ctx, e, c.CallID)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(sel+` textarea`), "Not this week"),
		chromedp.Click(chromedp.CSS(sel+` button[value="approve"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm-reject"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="confirm-reject"]`))); err != nil {
		t.Fatal(err)
	}
	if r := result(t, res); r.Out.Allowed || !strings.Contains(r.Out.Message, "Not this week") {
		t.Fatal("the typed reason was not used to reject:", r)
	}
}

func (s *stillInbox) grantEnds(t *testing.T) {
	e, ctx, call := s.e, s.ctx, s.call
	bg := context.Background()
	_, _ = e.DB.Pool.Exec(bg, `UPDATE standing_grants SET expires_at = now() - interval '1 second'`)
	if _, err := e.DB.ExpireDue(bg, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DB.ExpireDue(bg, 100); err != nil {
		t.Fatal(err)
	}
	var audited int
	_ = e.DB.Pool.QueryRow(bg, `SELECT count(*) FROM audit_events WHERE action = 'grant expired'`).Scan(&audited)
	if audited != 1 {
		t.Fatalf("grant expired audited %d times", audited)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/auto-approve"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="lapsed"]`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, `[data-testid="lapsed-why"]`); got != "Its time ran out" {
		t.Fatalf("lapsed why %q", got)
	}
	if eval[int](t, ctx, `document.querySelectorAll('tr[data-testid="grant-row"] button').length`) != 1 ||
		text(t, ctx, `tr[data-testid="grant-row"] button`) != "Clear" {
		t.Fatal("an ended grant offers more than Clear")
	}
	c := call("mail", "send_email", `{"to":"x@acme.example"}`)
	body := map[string]any{"call_id": c.CallID, "user": c.User, "conversation_id": c.ConversationID, "turn_id": c.TurnID,
		"connector": c.Connector, "tool": c.Tool, "arguments": c.Arguments}
	if _, out := e.API(e.APIKey(), "POST", "/api/v1/tool-calls", body); out["decision"] != "pending" {
		t.Fatal("an ended grant still applies:", out)
	}
}

// reject presses Reject on the card sel.
func reject(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel+` button[value="reject"]`))); err != nil {
		t.Fatal(err)
	}
}

func statusOf(t *testing.T, e *testenv.Env, callID string) string {
	t.Helper()
	var s string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT status FROM approvals WHERE call_id = $1`, callID).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}
