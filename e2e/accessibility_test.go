package e2e

import (
	"context"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// TestAccessibility runs axe-core on every screen and dialog a person
// reaches: no serious or critical violation anywhere. With
// COUNTERSIGN_SCREENSHOTS set it also saves each screen at desktop and phone
// width.
func TestAccessibility(t *testing.T) {
	if _, err := axeSource(); err != nil {
		checkAxe(t, context.Background(), "setup") // fails or skips with the reason
	}
	// The check itself finds what it should: a field without a label.
	probe := newTab(t)
	if err := chromedp.Do(probe, chromedp.Navigate(`data:text/html,<!doctype html><html lang="en"><title>x</title><main><input type="text"></main></html>`)); err != nil {
		t.Fatal(err)
	}
	if vs := axeRun(t, probe, "probe"); len(vs) == 0 {
		t.Fatal("axe-core found nothing wrong with an unlabelled field; the check is not working")
	}
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	if err := rt.RegisterPlaybook(context.Background(), dev.DemoPlaybookID, dev.DemoMember.Subject, dev.DemoPlaybook()); err != nil {
		t.Fatal(err)
	}
	member := newTab(t)
	visit := func(ctx context.Context, name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkAxe(t, ctx, name)
		screenshot(t, ctx, name)
	}
	signIn(t, member, e, "member")
	visit(member, "inbox-empty", chromedp.Navigate(e.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="user-name"]`)))

	waiting, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for _, c := range []client.Call{
		{CallID: "a1", Connector: "mail", Tool: "send_email", Arguments: `{"to":"finance@acme.example","subject":"Invoice 4471","body":"Hello,\n\nThe invoice is scheduled."}`, Reason: "Confirm the payment date."},
		{CallID: "a2", Connector: "files", Tool: "delete_file", Arguments: `{"path":"/reports/q3.xlsx"}`},
	} {
		c.User, c.ConversationID, c.TurnID = dev.DemoMember.Subject, "conv-1", "turn-1"
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = rt.Gate(waiting, c) }()
	}
	card := cardFor(t, member, e, "a1")
	cardFor(t, member, e, "a2")
	visit(member, "inbox-pending")
	id := eval[string](t, member, `document.querySelector('`+card+`').dataset.approvalId`)
	visit(member, "request", chromedp.Navigate(e.BaseURL+"/approvals/"+id), chromedp.WaitVisible(chromedp.CSS(`#approval-page`)))
	visit(member, "auto-approve", chromedp.Navigate(e.BaseURL+"/auto-approve"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	visit(member, "playbooks", chromedp.Navigate(e.BaseURL+"/playbooks"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="playbook-row"]`)))
	visit(member, "playbook", chromedp.Navigate(e.BaseURL+"/playbooks/"+dev.DemoPlaybookID), chromedp.WaitVisible(chromedp.CSS(`[data-testid="enable"]`)))
	visit(member, "playbook-dialog", chromedp.Click(chromedp.CSS(`[data-testid="enable"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-dialog"]`)))
	if err := chromedp.Do(member, chromedp.Click(chromedp.CSS(`[data-testid="approve-tools"]`)), chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}
	// A run that made calls: allowed by pre-approval, by policy, refused.
	run, err := rt.StartRun(context.Background(), dev.DemoPlaybookID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []client.Call{
		{CallID: "r1", Connector: "mail", Tool: "send_email", Arguments: `{"to":"finance@acme.example"}`},
		{CallID: "r2", Connector: "mail", Tool: "search_messages", Arguments: `{"q":"invoice"}`},
		{CallID: "r3", Connector: "files", Tool: "delete_file", Arguments: `{"path":"/tmp/x"}`},
	} {
		c.User, c.ConversationID, c.TurnID, c.PlaybookRunID = dev.DemoMember.Subject, "run", "run", run.ID
		if _, err := rt.Gate(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	visit(member, "playbook-runs", chromedp.Navigate(e.BaseURL+"/playbooks/"+dev.DemoPlaybookID),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-call-allowed"]`)))
	visit(member, "activity", chromedp.Navigate(e.BaseURL+"/activity"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="activity-list"]`)))
	visit(member, "settings", chromedp.Navigate(e.BaseURL+"/settings"), chromedp.WaitVisible(chromedp.CSS(`h1`)))

	admin := newTab(t)
	signIn(t, admin, e, "admin")
	visit(admin, "policies", chromedp.Navigate(e.BaseURL+"/admin/policies"), chromedp.WaitVisible(chromedp.CSS(`tr[data-tool="send_email"]`)))
	visit(admin, "policy-edit-args", chromedp.Click(chromedp.CSS(`tr[data-tool="send_email"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="argument-names"]`)))
	visit(admin, "policy-impact", chromedp.SendKeys(chromedp.CSS(`#condition`), "size(args.to) > 1"),
		chromedp.Click(chromedp.CSS(`button[value="save"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="impact"]`)))
	if err := chromedp.Do(admin, chromedp.Click(chromedp.CSS(`[data-testid="confirm-save"]`)), chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}
	visit(admin, "policies-saved")
	visit(admin, "audit", chromedp.Navigate(e.BaseURL+"/admin/audit"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="audit-filters"]`)))
	visit(admin, "audit-verify", chromedp.Navigate(e.BaseURL+"/admin/audit/verify"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkpoints"]`)))
	visit(admin, "insights", chromedp.Navigate(e.BaseURL+"/admin/insights"), chromedp.WaitVisible(chromedp.CSS(`.chart`)))
	// One chart at a time: the wide one on a desktop, the narrow one on a phone.
	if !eval[bool](t, admin, `(() => {
		const shown = s => getComputedStyle(document.querySelector(s)).display !== 'none';
		const phone = matchMedia('(max-width: 640px)').matches;
		return shown('[data-testid="insights-chart"]') !== phone && shown('[data-testid="insights-chart-narrow"]') === phone;
	})()`) {
		t.Error("the insights page does not show exactly the chart for its width")
	}
	visit(admin, "api-keys", chromedp.Navigate(e.BaseURL+"/admin/api-keys"), chromedp.WaitVisible(chromedp.CSS(`#key-name`)))
	visit(admin, "api-key-new", chromedp.SendKeys(chromedp.CSS(`#key-name`), "staging runtime"), chromedp.Submit(chromedp.CSS(`#key-name`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="new-key"]`)))
	visit(admin, "api-key-revoke", chromedp.Click(chromedp.CSS(`[data-testid="api-key-row"] [data-testid="revoke"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="revoke-dialog"]`)))
	visit(admin, "webhooks", chromedp.Navigate(e.BaseURL+"/admin/webhooks"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	visit(newTab(t), "sign-in", chromedp.Navigate(e.BaseURL+"/signin"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="sign-in"]`)))
	visit(admin, "not-found", chromedp.Navigate(e.BaseURL+"/no-such-page"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
}
