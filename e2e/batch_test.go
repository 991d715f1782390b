package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// identical starts n calls with the same key, tool and arguments, each in
// its own turn, and returns their results and call ids.
func identical(t *testing.T, e *testenv.Env, rt *client.Client, prefix, args string, n int) ([]chan gateResult, []string) {
	t.Helper()
	var res []chan gateResult
	var ids []string
	for i := 1; i <= n; i++ {
		c := client.Call{CallID: fmt.Sprintf("%s-%d", prefix, i), User: dev.DemoMember.Subject, ConversationID: "conv-batch",
			TurnID: fmt.Sprintf("%s-turn-%d", prefix, i), Connector: "calendar", Tool: "create_event", Arguments: args}
		res = append(res, gate(rt, c))
		approvalID(t, e, c.CallID)
		ids = append(ids, c.CallID)
	}
	return res, ids
}

// pickAllLikeThis selects the first listed call and every call like it.
func pickAllLikeThis(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#pending-rows > li:first-child a`))); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, fmt.Sprintf(`(document.querySelector('[data-testid="like-all"]:not([hidden])') || {}).textContent === 'Select all %d like this'`, n), "no “select all like this”")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="like-all"]`))); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, fmt.Sprintf(`document.querySelectorAll('#pending-rows input[data-batch-pick]:checked').length === %d`, n), "the calls like it were not selected")
}

func TestBatchDecisions(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")

	t.Run("ApproveAllFive", func(t *testing.T) {
		res, calls := identical(t, e, rt, "same", `{"title":"Standup","start":"2026-12-07T09:00:00Z"}`, 5)
		waitInbox(t, ctx, e, 5)
		pickAllLikeThis(t, ctx, 5)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="batch-approve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="batch-dialog"]`))); err != nil {
			t.Fatal(err)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="batch-confirm-item"]').length`); n != 5 {
			t.Fatalf("the question lists %d calls", n)
		}
		if !eval[bool](t, ctx, `document.activeElement === document.querySelector('[data-testid="batch-cancel"]')`) {
			t.Fatal("the question does not start on Cancel")
		}
		checkAxe(t, ctx, "batch question")
		shot(t, ctx, "act-batch-confirm")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="batch-confirm"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="batch-result"]`))); err != nil {
			t.Fatal(err)
		}
		if got := text(t, ctx, `[data-testid="batch-summary"]`); got != "Approved 5 of 5 calls." {
			t.Fatalf("summary %q", got)
		}
		for i, ch := range res {
			if r := result(t, ch); !r.Out.Allowed || r.Out.Scope != "once" {
				t.Fatalf("call %d: %v", i+1, r)
			}
		}
		bg := context.Background()
		var lines, batches, grants int
		if err := e.DB.Pool.QueryRow(bg, `SELECT count(*), count(DISTINCT detail->>'batch_id') FROM audit_events
			WHERE action = 'approved' AND detail ? 'batch_id' AND approval_id IN (SELECT id::text FROM approvals WHERE call_id LIKE 'same-%')`).Scan(&lines, &batches); err != nil {
			t.Fatal(err)
		}
		if lines != 5 || batches != 1 {
			t.Fatalf("%d audit lines with %d batch ids, want 5 with 1", lines, batches)
		}
		_ = e.DB.Pool.QueryRow(bg, `SELECT count(*) FROM standing_grants`).Scan(&grants)
		if grants != 0 {
			t.Fatal("a batch gave a standing grant")
		}
		// Each runtime claimed its call once: a second claim is refused.
		for _, callID := range calls {
			if s := statusOf(t, e, callID); s != "consumed" {
				t.Fatalf("%s is %s", callID, s)
			}
		}
		var id, digest string
		_ = e.DB.Pool.QueryRow(bg, `SELECT id::text, arguments_digest FROM approvals WHERE call_id = $1`, calls[0]).Scan(&id, &digest)
		if code, _ := e.API(e.APIKey(), "POST", "/api/v1/approvals/"+id+"/claim", map[string]any{"call_id": calls[0], "arguments_digest": digest}); code != 409 && code != 404 {
			t.Fatalf("a second claim: %d", code)
		}
	})

	t.Run("OneCancelledMeanwhile", func(t *testing.T) {
		res, calls := identical(t, e, rt, "alike", `{"title":"Retro","start":"2026-12-08T15:00:00Z"}`, 5)
		waitInbox(t, ctx, e, 5)
		pickAllLikeThis(t, ctx, 5)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="batch-approve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="batch-dialog"]`))); err != nil {
			t.Fatal(err)
		}
		// The third call's runtime stops its turn while the question is open.
		if n, err := rt.CancelTurn(context.Background(), dev.DemoMember.Subject, "conv-batch", "alike-turn-3"); err != nil || n != 1 {
			t.Fatal("cancel the turn:", n, err)
		}
		if s := statusOf(t, e, calls[2]); s != "cancelled" {
			t.Fatalf("the third call is %s", s)
		}
		// The page has heard of it (its card left the list) before the batch
		// is sent, so that what the page shows is the same on every run.
		third := approvalID(t, e, calls[2])
		until(t, ctx, `!document.querySelector('#pending-list > li[data-approval-id="`+third+`"]') && document.querySelectorAll('#pending-list > li[data-approval-id]').length === 4`,
			"the cancelled call's card stayed")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="batch-confirm"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="batch-result"]`))); err != nil {
			t.Fatal(err)
		}
		shot(t, ctx, "act-batch-result")
		if got := text(t, ctx, `[data-testid="batch-summary"]`); got != "Approved 4 of 5 calls; 1 not decided (see below)." {
			t.Fatalf("summary %q", got)
		}
		why := eval[string](t, ctx, `[...document.querySelectorAll('[data-testid="batch-outcome"]:not([data-decided])')].map(li => li.textContent).join('|')`)
		if !strings.Contains(why, "Cancelled") || !strings.Contains(why, "cancelled before it was answered") {
			t.Fatalf("the cancelled call is reported as %q", why)
		}
		for i, ch := range res {
			r := result(t, ch)
			if (i == 2) == r.Out.Allowed {
				t.Fatalf("call %d: %v", i+1, r)
			}
		}
		var lines int
		_ = e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE action = 'approved' AND detail ? 'batch_id'
			AND approval_id IN (SELECT id::text FROM approvals WHERE call_id LIKE 'alike-%')`).Scan(&lines)
		if lines != 4 {
			t.Fatalf("%d audit lines, want 4", lines)
		}
	})

	t.Run("ErrStandingOrSomeoneElses", func(t *testing.T) {
		_, calls := identical(t, e, rt, "other", `{"title":"Planning"}`, 1)
		var id string
		_ = e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE call_id = $1`, calls[0]).Scan(&id)
		member := e.NewBrowser()
		member.T = t
		member.SignIn("member")
		if resp, _ := member.PostForm("/approvals/batch", url.Values{"decision": {"always"}, "id": {id}}); resp.StatusCode != 422 {
			t.Fatalf("a standing batch: %d", resp.StatusCode)
		}
		admin := e.NewBrowser()
		admin.T = t
		admin.SignIn("admin")
		resp, body := admin.PostForm("/approvals/batch", url.Values{"decision": {"approve"}, "id": {id, "not-a-uuid"}})
		if resp.StatusCode != 200 || !strings.Contains(body, "Approved 0 of 2 calls") || strings.Contains(body, "Create event") {
			t.Fatalf("someone else's call: %d %s", resp.StatusCode, body)
		}
		if s := statusOf(t, e, calls[0]); s != "pending" {
			t.Fatal("someone else's batch decided the call:", s)
		}
	})
}
