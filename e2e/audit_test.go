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

// TestAuditCompactLines: at 1280 px each event is one line, however long
// its actor, tool or place; its details unfold below it from a Details
// button, by mouse or keyboard, which says whether it is open.
func TestAuditCompactLines(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := context.Background()
	// Real events of every shape: a call asked and decided by a person
	// (with the agent that asked), a policy change with its diff, a key.
	res := gate(rt, memberCall("audit-1", "mail", "send_email", `{"to":"finance@acme.example"}`))
	member := e.NewBrowser()
	member.T = t
	member.SignIn("member")
	if resp, _ := member.PostForm("/approvals/"+approvalID(t, e, "audit-1")+"/decision", map[string][]string{"decision": {"reject"}, "reason": {"Not this week"}}); resp.StatusCode != 303 {
		t.Fatal(resp.StatusCode)
	}
	result(t, res)
	err := e.DB.InTx(ctx, func(tx pgx.Tx) error {
		return db.RecordAudit(ctx, tx, approval.AuditEvent{Actor: approval.Actor{Kind: "user", ID: "demo-member", Name: "Maya Member of the Accounts Payable and Receivables Team"},
			Action: "approved", Connector: "calendar", Tool: "create_event",
			ConversationID: "conversation-about-the-quarterly-budget-review-with-many-words", TurnID: "turn-0123456789abcdef"})
	})
	if err != nil {
		t.Fatal(err)
	}
	admin := newTab(t)
	signIn(t, admin, e, "admin")
	if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/audit"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="audit-toggle"]`))); err != nil {
		t.Fatal(err)
	}
	heights := eval[[]float64](t, admin, `[...document.querySelectorAll('[data-testid="audit-line"]')].map(r => r.getBoundingClientRect().height)`)
	oneLine := eval[float64](t, admin, `(() => { const td = document.querySelector('[data-testid="audit-line"] [data-testid="audit-action"]'); const s = getComputedStyle(td);
		return parseFloat(s.lineHeight) + parseFloat(s.paddingTop) + parseFloat(s.paddingBottom) + 1; })()`)
	if len(heights) < 5 {
		t.Fatalf("only %d events on the page", len(heights))
	}
	// The Details button is a little taller than a line of text.
	limit := max(oneLine, eval[float64](t, admin, `document.querySelector('[data-testid="audit-toggle"]').getBoundingClientRect().height + 14`))
	for i, h := range heights {
		if h > limit {
			t.Errorf("event %d is %.0f px tall, more than one line (%.0f px)", i+1, h, limit)
		}
	}
	t.Logf("%d events at %.0f–%.0f px each (one line: %.0f px)", len(heights), minOf(heights), maxOf(heights), limit)
	if eval[int](t, admin, `[...document.querySelectorAll('[data-testid="audit-details"]')].filter(d => d.getBoundingClientRect().height > 0).length`) != 0 {
		t.Fatal("details are shown before they are asked for")
	}
	screenshot(t, admin, "audit-compact")

	// Open by mouse: the row below shows everything, the button says so.
	first := `[data-testid="audit-line"]:first-of-type`
	if err := chromedp.Do(admin, chromedp.Click(chromedp.CSS(first+` [data-testid="audit-toggle"]`))); err != nil {
		t.Fatal(err)
	}
	details := `#` + eval[string](t, admin, `document.querySelector('`+first+` [data-testid="audit-toggle"]').getAttribute('aria-controls')`)
	if eval[string](t, admin, `document.querySelector('`+first+` [data-testid="audit-toggle"]').getAttribute('aria-expanded')`) != "true" ||
		!eval[bool](t, admin, `document.querySelector('`+details+`').getBoundingClientRect().height > 0`) {
		t.Fatal("Details did not unfold the event")
	}
	if got := text(t, admin, details); !strings.Contains(got, "Raw fields") || !strings.Contains(got, "action") {
		t.Fatalf("the details read %q", got)
	}
	// Close and open again by keyboard.
	if err := chromedp.Do(admin, chromedp.Focus(chromedp.CSS(first+` [data-testid="audit-toggle"]`)), chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	if eval[string](t, admin, `document.querySelector('`+first+` [data-testid="audit-toggle"]').getAttribute('aria-expanded')`) != "false" ||
		eval[bool](t, admin, `document.querySelector('`+details+`').getBoundingClientRect().height > 0`) {
		t.Fatal("Enter did not fold the event")
	}
	if err := chromedp.Do(admin, chromedp.KeyEvent(" ")); err != nil {
		t.Fatal(err)
	}
	if eval[string](t, admin, `document.querySelector('`+first+` [data-testid="audit-toggle"]').getAttribute('aria-expanded')`) != "true" {
		t.Fatal("Space did not unfold the event")
	}
	checkAxe(t, admin, "audit with an event unfolded")
	screenshot(t, admin, "audit-unfolded")
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
