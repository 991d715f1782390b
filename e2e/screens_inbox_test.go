package e2e

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// TestScreenshotsInbox renders the inbox with waiting calls, one request's
// page and the Auto-approve tab into COUNTERSIGN_SCREENSHOTS, at desktop
// and phone width. Without the variable it is skipped.
func TestScreenshotsInbox(t *testing.T) {
	if os.Getenv("COUNTERSIGN_SCREENSHOTS") == "" {
		t.Skip("set COUNTERSIGN_SCREENSHOTS to a folder to render screenshots")
	}
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	long := "Hello,\n\nThe invoice 4471 is scheduled for payment on Friday. "
	for len(long) < 900 {
		long += "We also attached the remittance advice and the updated purchase order so your team can reconcile both documents. "
	}
	calls := []client.Call{
		{CallID: "p1", Connector: "mail", Tool: "send_email", Arguments: `{"to":["finance@acme.example","ap@acme.example","maya@acme.example"],"subject":"Invoice 4471","body":"` + jsonText(long) + `","send_at":"2026-12-01T09:30:00Z","meta":{"thread":"INV-4471","labels":["finance","q4"]}}`,
			Reason: "Confirm the payment date to Acme's finance team."},
		{CallID: "p2", Connector: "files", Tool: "delete_file", Arguments: `{"path":"/srv/reports/2025/q4-final.xlsx"}`},
		{CallID: "p3", Connector: "calendar", Tool: "create_event", Arguments: `{"title":"Payment run","start":"2026-12-04T10:00:00+01:00"}`},
	}
	waiting, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for i := range calls {
		calls[i].User, calls[i].ConversationID, calls[i].TurnID = dev.DemoMember.Subject, "conv-2f9c1d7e-44aa-4c1b-9a0e-7d3b2c1f0e9a", "turn-3"
		if i == 0 {
			calls[i].ConversationTitle = "Acme invoices, Q4"
		}
		wg.Add(1)
		go func(c client.Call) { defer wg.Done(); _, _ = rt.Gate(waiting, c) }(calls[i])
		// One at a time, so that the page shows them in a known order.
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll('li[data-approval-id]').length === `+itoaE(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	screenshot(t, ctx, "p13-inbox")
	// The calls that arrived while the first was shown wait in the bar.
	eval[bool](t, ctx, `!!document.querySelector('[data-show-new]') && !document.querySelector('[data-show-new]').click()`)
	screenshot(t, ctx, "p13-inbox-shown")
	eval[bool](t, ctx, `!document.querySelector('#pending-list button[value="always"]').click()`)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`dialog[open]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "p13-confirm")
	eval[bool](t, ctx, `!document.querySelector('dialog[open]').close()`)

	var first string
	_ = e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE call_id = 'p1'`).Scan(&first)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/approvals/"+first), chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-page"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "p13-request")

	member := e.User(dev.DemoMember.Subject)
	var event string
	_ = e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE call_id = 'p3'`).Scan(&event)
	if _, err := e.DB.Decide(context.Background(), event, member, approval.AlwaysAllow, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DB.Decide(context.Background(), first, member, approval.ApproveConversation, ""); err != nil {
		t.Fatal(err)
	}
	_, _ = e.DB.Pool.Exec(context.Background(), `UPDATE tools SET policy_version = policy_version + 1 WHERE name = 'send_email'`)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/auto-approve"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="grant-row"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "p13-autoapprove")
}

func itoaE(n int) string { return string(rune('0' + n)) }

// jsonText escapes s for a JSON string literal (line breaks only; the
// screenshot text holds nothing else that needs it).
func jsonText(s string) string {
	out := ""
	for _, r := range s {
		if r == '\n' {
			out += `\n`
			continue
		}
		out += string(r)
	}
	return out
}
