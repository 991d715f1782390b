package e2e

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// TestScreenshots renders the screens at desktop and phone width into
// COUNTERSIGN_SCREENSHOTS, for a person to look at. It asserts nothing the
// other tests don't; without the variable it is skipped.
func TestScreenshots(t *testing.T) {
	if os.Getenv("COUNTERSIGN_SCREENSHOTS") == "" {
		t.Skip("set COUNTERSIGN_SCREENSHOTS to a folder to render screenshots")
	}
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	if err := rt.RegisterPlaybook(context.Background(), dev.DemoPlaybookID, dev.DemoMember.Subject, dev.DemoPlaybook()); err != nil {
		t.Fatal(err)
	}
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	screenshot(t, ctx, "inbox-empty")

	calls := []client.Call{
		{CallID: "s1", Connector: "mail", Tool: "send_email", Arguments: `{"to":"finance@acme.example","subject":"Invoice 4471 — payment scheduled","body":"Hello,\n\nThe invoice 4471 is scheduled for payment on Friday. Let me know if anything is missing. We also attached the remittance advice and the updated purchase order so your team can reconcile both documents before the end of the quarter.\n\nBest regards,\nMaya"}`, Reason: "Confirm the payment date to Acme's finance team."},
		{CallID: "s2", Connector: "web", Tool: "open_page", Arguments: `{"url":"https://status.example.com/incidents/2291?utm_source=agent&utm_medium=chat&session=8f1b2c9d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4"}`},
		{CallID: "s3", Connector: "system", Tool: "run_command", Arguments: `{"command": "rm -rf ./build && make release", "cwd": [unclosed`},
		{CallID: "s4", Connector: "mail", Tool: "send_email", Arguments: "{\"to\":\"billing@p\u0430ypal.com\",\"subject\":\"Pay\u200bPal receipt\",\"attachment\":\"invoice_4471_\u202Efdp.exe\",\"body\":\"Line one\\rLine two\"}",
			Reason: "Forward the receipt\u2066 as asked"},
	}
	// The runtime waits on these until the test ends; it stops waiting then.
	waiting, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for i := range calls {
		calls[i].User, calls[i].ConversationID, calls[i].TurnID = dev.DemoMember.Subject, "conv-7", "turn-3"
		wg.Add(1)
		go func(c client.Call) { defer wg.Done(); _, _ = rt.Gate(waiting, c) }(calls[i])
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll('[data-testid="approval-card"]').length === 4`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "inbox-pending")

	admin := newTab(t)
	signIn(t, admin, e, "admin")
	if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/api-keys")); err != nil {
		t.Fatal(err)
	}
	screenshot(t, admin, "api-keys")
	for _, page := range []string{"audit", "insights", "policies"} {
		if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/"+page)); err != nil {
			t.Fatal(err)
		}
		screenshot(t, admin, page)
	}
	if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/policies"),
		chromedp.Click(chromedp.CSS(`tr[data-tool="create_event"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="policy-form"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, admin, "policy-edit")
	if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/api-keys"),
		chromedp.SendKeys(chromedp.CSS(`#key-name`), "staging runtime"),
		chromedp.Submit(chromedp.CSS(`#key-name`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="new-key"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, admin, "api-key-new")
	for _, page := range []string{"/settings", "/admin/webhooks"} {
		if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+page)); err != nil {
			t.Fatal(err)
		}
		screenshot(t, admin, strings.TrimPrefix(strings.ReplaceAll(page, "/admin/", ""), "/"))
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/playbooks")); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "playbooks")
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/playbooks/"+dev.DemoPlaybookID),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="enable"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "playbook")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="enable"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-dialog"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "playbook-dialog")
	if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/no-such-page")); err != nil {
		t.Fatal(err)
	}
	screenshot(t, admin, "not-found")
}
