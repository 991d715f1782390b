package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

func TestAuditScreenFilterPageCSV(t *testing.T) {
	e := testenv.NewEnv(t)
	runtime(t, e) // the catalog names the tools the filter lists
	ctx := context.Background()
	// 120 lines for one tool and action among others.
	err := e.DB.InTx(ctx, func(tx pgx.Tx) error {
		for i := 0; i < 200; i++ {
			ev := approval.AuditEvent{Actor: approval.Actor{Kind: "user", ID: "demo-member", Name: "Maya Member"},
				Action: "approved", Connector: "mail", Tool: "send_email", ConversationID: "c", TurnID: "t"}
			if i%5 == 0 {
				ev.Action = "rejected"
			}
			if i%5 == 1 {
				ev.Tool = "delete_message"
			}
			if err := db.RecordAudit(ctx, tx, ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	admin := newTab(t)
	signIn(t, admin, e, "admin")
	err = chromedp.Do(admin,
		chromedp.Navigate(e.BaseURL+"/admin/audit"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="audit-filters"]`)),
		chromedp.Evaluate[chromedp.Void](`(() => { document.querySelector('#f-tool').value = 'send_email'; return {} })()`),
		chromedp.Click(chromedp.CSS(`[data-testid="action-filter"] summary`)),
		chromedp.Click(chromedp.CSS(`input[name="action"][value="approved"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="audit-filters"] button[type="submit"]`)))
	if err != nil {
		t.Fatal(err)
	}
	// The unfiltered page has an Older link too: wait for the filtered one.
	waitURL(t, admin, "tool=send_email")
	loc, _ := chromedp.Run(admin, chromedp.Location())
	if !strings.Contains(loc, "tool=send_email") || !strings.Contains(loc, "action=approved") {
		t.Fatalf("filter not in the URL: %s", loc)
	}
	lines := func() []string {
		return eval[[]string](t, admin, `[...document.querySelectorAll('[data-testid="audit-line"]')].map(e => e.querySelector('[data-testid="audit-action"]').textContent + ' · ' + e.querySelector('[data-testid="audit-tool"] .mono').textContent)`)
	}
	first := lines()
	if len(first) != 50 {
		t.Fatalf("first page %d lines", len(first))
	}
	for _, l := range first {
		if !strings.Contains(l, "approved · mail · send_email") {
			t.Fatalf("line outside the filter: %q", l)
		}
	}
	screenshot(t, admin, "audit-filtered")
	firstID := eval[string](t, admin, `document.querySelector('[data-testid="audit-line"]').dataset.id`)
	if err := chromedp.Do(admin, chromedp.Click(chromedp.CSS(`[data-testid="older"]`))); err != nil {
		t.Fatal(err)
	}
	waitURL(t, admin, "before=")
	second := eval[[]string](t, admin, `[...document.querySelectorAll('[data-testid="audit-line"]')].map(e => e.dataset.id)`)
	if len(second) != 50 {
		t.Fatalf("second page %d lines", len(second))
	}
	if err := chromedp.Do(admin, chromedp.Click(chromedp.CSS(`[data-testid="newer"]`))); err != nil {
		t.Fatal(err)
	}
	waitURL(t, admin, "after=")
	if got := eval[string](t, admin, `document.querySelector('[data-testid="audit-line"]').dataset.id`); got != firstID {
		t.Fatalf("back to the first page: %s, want %s", got, firstID)
	}
	// Download the CSV of the same filter.
	body, err := chromedp.Run(admin, chromedp.Evaluate[string](`(async () => { const r = await fetch(document.querySelector('[data-testid="csv"]').href); return r.headers.get('content-type') + '\n' + await r.text(); })()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(body), "\n")
	if !strings.HasPrefix(rows[0], "text/csv") || len(rows) != 2+120 {
		t.Fatalf("csv: %q… %d rows", rows[0], len(rows))
	}
	for _, row := range rows[2:] {
		if !strings.Contains(row, ",approved,") || !strings.Contains(row, ",send_email,") {
			t.Fatalf("csv row outside the filter: %q", row)
		}
	}
}
