package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

func TestPlaybookApprovalDialog(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	if err := rt.RegisterPlaybook(context.Background(), dev.DemoPlaybookID, dev.DemoMember.Subject, dev.DemoPlaybook()); err != nil {
		t.Fatal(err)
	}
	member := newTab(t)
	signIn(t, member, e, "member")
	enable := func() {
		t.Helper()
		err := chromedp.Do(member,
			chromedp.Navigate(e.BaseURL+"/playbooks"),
			chromedp.Click(chromedp.CSS(`[data-testid="playbook-row"] a`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="enable"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="enable"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-dialog"]`)))
		if err != nil {
			t.Fatal(err)
		}
	}
	enable()
	if !eval[bool](t, member, `document.querySelector('dialog').matches(':modal')`) {
		t.Fatal("the dialog is not modal")
	}
	pairs := eval[[]string](t, member, `[...document.querySelectorAll('[data-testid="dialog-pair"] strong')].map(e => e.textContent)`)
	if strings.Join(pairs, ",") != "Send email,Create event" {
		t.Fatalf("dialog pairs %v", pairs)
	}
	if eval[string](t, member, `document.activeElement && document.activeElement.dataset.testid`) != "cancel-dialog" {
		t.Fatal("focus is not on the dialog's Cancel")
	}
	screenshot(t, member, "playbook-dialog")
	if err := chromedp.Do(member, chromedp.Click(chromedp.CSS(`[data-testid="approve-tools"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, member, `[data-testid="playbook-state"]`); got != "Enabled" {
		t.Fatalf("state %q", got)
	}
	if run, err := rt.StartRun(context.Background(), dev.DemoPlaybookID); err != nil || len(run.Preapproved) != 2 {
		t.Fatal(run, err)
	}

	// The admin changes the tool's policy in the Policies screen.
	admin := newTab(t)
	signIn(t, admin, e, "admin")
	err := chromedp.Do(admin,
		chromedp.Navigate(e.BaseURL+"/admin/policies"),
		chromedp.Click(chromedp.CSS(`tr[data-tool="create_event"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="policy-form"]`)),
		chromedp.SendKeys(chromedp.CSS(`#condition`), "size(args.attendees) > 3"),
		chromedp.Click(chromedp.CSS(`button[value="save"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="impact"]`)))
	if err != nil {
		t.Fatal(err)
	}
	if impact := text(t, admin, `[data-testid="impact"]`); !strings.Contains(impact, "1 playbook pre-approval will lapse") {
		t.Fatalf("impact %q", impact)
	}
	if err := chromedp.Do(admin, chromedp.Click(chromedp.CSS(`[data-testid="confirm-save"]`)), chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}

	if err := chromedp.Do(member, chromedp.Navigate(e.BaseURL+"/playbooks/"+dev.DemoPlaybookID),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lapse-reason"]`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, member, `[data-testid="lapse-reason"]`); got != approval.LapsePolicy {
		t.Fatalf("lapse reason %q", got)
	}
	screenshot(t, member, "playbook-lapsed")
	enable()
	if pairs := eval[[]string](t, member, `[...document.querySelectorAll('[data-testid="dialog-pair"] strong')].map(e => e.textContent)`); strings.Join(pairs, ",") != "Create event" {
		t.Fatalf("dialog after lapse %v", pairs)
	}
	if !strings.Contains(text(t, member, `[data-testid="approval-dialog"]`), approval.LapsePolicy) {
		t.Fatal("dialog does not say why")
	}
}
