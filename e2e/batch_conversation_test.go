package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// "Select all of this tool in this conversation": three calls of one tool
// in one conversation, with different arguments, are selected together —
// not the same tool in another conversation, nor another tool in the same
// one — the question lists each, and each is approved on its own.
func TestBatchSameToolInConversation(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	var res []chan gateResult
	ask := func(callID, conv, connector, tool, args string) {
		t.Helper()
		c := client.Call{CallID: callID, User: dev.DemoMember.Subject, ConversationID: conv, TurnID: callID + "-turn",
			Connector: connector, Tool: tool, Arguments: args}
		ch := gate(rt, c)
		approvalID(t, e, c.CallID)
		if conv == "conv-plan" && tool == "create_event" {
			res = append(res, ch)
		}
	}
	for i := 1; i <= 3; i++ {
		ask(fmt.Sprint("plan-", i), "conv-plan", "calendar", "create_event", fmt.Sprintf(`{"title":"Session %d"}`, i))
	}
	ask("elsewhere", "conv-other", "calendar", "create_event", `{"title":"Session 1"}`)
	ask("other-tool", "conv-plan", "mail", "send_email", `{"to":"team@example.com","subject":"Plan"}`)
	waitInbox(t, ctx, e, 5)

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#pending-rows > li[data-row-for="`+approvalID(t, e, "plan-2")+`"] a`))); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, `(document.querySelector('[data-testid="conv-all"]:not([hidden])') || {}).textContent === 'Select all 3 of this tool in this conversation'`,
		"no “select all of this tool in this conversation”")
	if eval[bool](t, ctx, `!document.querySelector('[data-testid="like-all"]').hidden`) {
		t.Fatal("“like this” is offered for a call no other call is like")
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="conv-all"]`))); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, `document.querySelectorAll('#pending-rows input[data-batch-pick]:checked').length === 3`, "the conversation's calls were not selected")
	picked := eval[[]string](t, ctx, `[...document.querySelectorAll('#pending-rows input[data-batch-pick]:checked')].map(i => i.closest('li').getAttribute('data-row-for')).sort()`)
	want := []string{approvalID(t, e, "plan-1"), approvalID(t, e, "plan-2"), approvalID(t, e, "plan-3")}
	if fmt.Sprint(picked) != fmt.Sprint(slices.Sorted(slices.Values(want))) {
		t.Fatalf("selected %v, want %v", picked, want)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="batch-approve"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="batch-dialog"]`))); err != nil {
		t.Fatal(err)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="batch-confirm-item"]').length`); n != 3 {
		t.Fatalf("the question lists %d calls", n)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="batch-confirm"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="batch-result"]`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, `[data-testid="batch-summary"]`); got != "Approved 3 of 3 calls." {
		t.Fatalf("summary %q", got)
	}
	for i, ch := range res {
		if r := result(t, ch); !r.Out.Allowed || r.Out.Scope != "once" {
			t.Fatalf("call %d: %v", i+1, r)
		}
	}
	for _, callID := range []string{"elsewhere", "other-tool"} {
		if s := statusOf(t, e, callID); s != "pending" {
			t.Fatalf("%s outside the selection is %s", callID, s)
		}
	}
	var lines, batches int
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT detail->>'batch_id') FROM audit_events
		WHERE action = 'approved' AND detail ? 'batch_id'`).Scan(&lines, &batches); err != nil || lines != 3 || batches != 1 {
		t.Fatalf("%d audit lines with %d batch ids, want 3 with 1 (%v)", lines, batches, err)
	}
}
