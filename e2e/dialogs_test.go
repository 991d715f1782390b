package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// Dialogs work by keyboard alone: focus starts on Cancel, Tab stays inside,
// Escape or Enter on Cancel closes and returns focus to the control that
// opened it, without that Enter also pressing the control.
func TestDialogsByKeyboard(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	if err := rt.RegisterPlaybook(context.Background(), dev.DemoPlaybookID, dev.DemoMember.Subject, dev.DemoPlaybook()); err != nil {
		t.Fatal(err)
	}
	admin := newTab(t)
	signIn(t, admin, e, "admin")

	t.Run("CopyNewKey", func(t *testing.T) {
		err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/api-keys"),
			chromedp.SendKeys(chromedp.CSS(`#key-name`), "staging runtime"), chromedp.Submit(chromedp.CSS(`#key-name`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="copy-key"]`)),
			chromedp.Focus(chromedp.CSS(`[data-testid="copy-key"]`)), chromedp.KeyEvent(kb.Enter))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(admin, chromedp.Poll[bool](`document.querySelector('[data-copy-status]').textContent !== ''`)); err != nil {
			t.Fatal("Copy said nothing:", err)
		}
		key := text(t, admin, `[data-testid="new-key-value"]`)
		said := text(t, admin, `[data-copy-status]`)
		selected := eval[string](t, admin, `window.getSelection().toString().trim()`)
		if said != "Copied." && selected != key {
			t.Fatalf("Copy neither copied nor selected the key: %q, selection %q", said, selected)
		}
	})

	t.Run("RevokeKeyDialog", func(t *testing.T) {
		err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/api-keys"),
			chromedp.Focus(chromedp.CSS(`[data-testid="api-key-row"] [data-testid="revoke"]`)), chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="revoke-dialog"]`)))
		if err != nil {
			t.Fatal(err)
		}
		opener := eval[string](t, admin, `document.querySelector('dialog').dataset.returnFocus`)
		trapped(t, admin, "revoke-cancel")
		if !strings.Contains(text(t, admin, `[data-testid="revoke-dialog"]`), "will be refused") {
			t.Fatal("the dialog does not say runtimes will be refused")
		}
		if err := chromedp.Do(admin, chromedp.KeyEvent(kb.Escape)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(admin, chromedp.Poll[bool](`!document.querySelector('dialog').open`)); err != nil {
			t.Fatal("Escape did not close the dialog")
		}
		if !eval[bool](t, admin, `document.activeElement === document.querySelector('`+opener+`')`) || eval[string](t, admin, `location.pathname`) != "/admin/api-keys" {
			t.Fatal("focus did not return to the Revoke button")
		}
		if eval[int](t, admin, `document.querySelectorAll('.badge.bad').length`) != 0 {
			t.Fatal("cancelling revoked the key")
		}
	})

	t.Run("SchedulePreview", func(t *testing.T) {
		member := newTab(t)
		signIn(t, member, e, "member")
		err := chromedp.Do(member, chromedp.Navigate(e.BaseURL+"/playbooks/"+dev.DemoPlaybookID),
			chromedp.WaitVisible(chromedp.CSS(`[data-cron-preset="0 9 * * 1-5"]`)),
			chromedp.Click(chromedp.CSS(`[data-cron-preset="0 9 * * 1-5"]`)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(member, chromedp.Poll[bool](`document.querySelectorAll('#schedule-preview time').length === 3`)); err != nil {
			t.Fatal("a preset did not show the next three runs:", err)
		}
		if got := eval[string](t, member, `document.querySelector('#schedule').value`); got != "0 9 * * 1-5" {
			t.Fatalf("the preset put %q in the field", got)
		}
		err = chromedp.Do(member, chromedp.Evaluate[chromedp.Void](`(() => { const f = document.querySelector('#schedule'); f.value = '0 9 * *'; f.dispatchEvent(new Event('change', {bubbles: true})); return {} })()`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(member, chromedp.Poll[bool](`!!document.querySelector('#schedule-preview .field-error') && document.querySelectorAll('#schedule-preview time').length === 0`)); err != nil {
			t.Fatal("a bad expression was not explained:", err)
		}
	})

	t.Run("PlaybookDialog", func(t *testing.T) {
		member := newTab(t)
		signIn(t, member, e, "member")
		err := chromedp.Do(member, chromedp.Navigate(e.BaseURL+"/playbooks/"+dev.DemoPlaybookID),
			chromedp.Focus(chromedp.CSS(`[data-testid="enable"]`)), chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-dialog"]`)))
		if err != nil {
			t.Fatal(err)
		}
		trapped(t, member, "cancel-dialog")
		if err := chromedp.Do(member, chromedp.Focus(chromedp.CSS(`[data-testid="cancel-dialog"]`)), chromedp.KeyEvent(kb.Enter)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(member, chromedp.Poll[bool](`document.activeElement && document.activeElement.dataset.testid === 'enable' && location.pathname === '/playbooks/`+dev.DemoPlaybookID+`'`)); err != nil {
			t.Fatalf("focus did not return to Enable: %v (at %s, on %s)", err, eval[string](t, member, `location.href`),
				eval[string](t, member, `document.activeElement ? document.activeElement.outerHTML.slice(0, 120) : ''`))
		}
	})
}

// trapped checks that focus starts on the element with data-testid start
// and that Tab never moves it to the page behind the open dialog (past the
// last control the browser may take it to its own toolbar, the body).
func trapped(t *testing.T, ctx context.Context, start string) {
	t.Helper()
	// The page's script makes the server-rendered dialog modal; a person
	// acts on it once it is.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('dialog[open]').matches(':modal')`)); err != nil {
		t.Fatal("the dialog is not modal:", err)
	}
	if got := eval[string](t, ctx, `document.activeElement && document.activeElement.dataset.testid`); got != start {
		t.Fatalf("focus starts on %q, want %q", got, start)
	}
	for range 4 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		if !eval[bool](t, ctx, `document.activeElement === document.body || !!document.activeElement.closest('dialog[open]')`) {
			t.Fatalf("Tab left the dialog: on %s", eval[string](t, ctx, `document.activeElement.outerHTML.slice(0, 120)`))
		}
	}
}
