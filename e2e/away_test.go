package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// While you're away, as a person clicks it: Maya names Avery on Settings
// with an end typed in the browser's time zone (Europe/Berlin here); the
// panel says who decides until when, in her time; Avery's card says
// "Deciding for Maya Member" and offers only Approve and Reject; the
// admin page lists the delegation. Screenshots at 1280 and 390 px when
// COUNTERSIGN_SCREENSHOTS is set.
func TestAwayPanel(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	admin := newTab(t)
	signIn(t, admin, e, "admin") // Avery has signed in once: she can be named
	zone := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Europe/Berlin"})
		return err
	})
	if err := chromedp.Do(ctx, zone); err != nil {
		t.Fatal(err)
	}
	signIn(t, ctx, e, "member")
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/settings"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="away-form"]`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, `[data-tz-help]`); !strings.Contains(got, "Europe/Berlin") {
		t.Fatalf("time zone help: %q", got)
	}
	screenshot(t, ctx, "settings-away-empty")

	// Friday-style: two days ahead at 18:00 Berlin time.
	end := time.Now().In(berlin(t)).Add(48 * time.Hour)
	end = time.Date(end.Year(), end.Month(), end.Day(), 18, 0, 0, 0, end.Location())
	err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#away-delegate`), dev.DemoAdmin.Email),
		chromedp.SetValue(chromedp.CSS(`#away-until`), end.Format("2006-01-02T15:04")),
		chromedp.Click(chromedp.CSS(`[data-away-form] button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="away-current"]`)))
	if err != nil {
		t.Fatal(err)
	}
	sentence := text(t, ctx, `[data-testid="away-current"] .away-sentence`)
	if !strings.Contains(sentence, "Avery Admin decides for you until") || !(strings.Contains(sentence, "18:00") || strings.Contains(sentence, "6:00 PM")) || strings.Contains(sentence, " .") {
		t.Fatalf("sentence: %q", sentence)
	}
	var stored time.Time
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT ends_at FROM delegations WHERE ended_at IS NULL`).Scan(&stored); err != nil || !stored.Equal(end) {
		t.Fatalf("stored end %v, want %v (%v)", stored, end.UTC(), err)
	}
	screenshot(t, ctx, "settings-away")

	// Refused: naming oneself keeps the input and says why.
	err = chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#away-delegate`), dev.DemoMember.Email),
		chromedp.SetValue(chromedp.CSS(`#away-until`), end.Format("2006-01-02T15:04")),
		chromedp.Click(chromedp.CSS(`[data-away-form] button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="away-error"]`)))
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "settings-away-error")

	// Avery decides Maya's call in her place.
	waiting, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() {
		_, _ = rt.Gate(waiting, client.Call{CallID: "away-1", User: dev.DemoMember.Subject, ConversationID: "c", TurnID: "t",
			Connector: "mail", Tool: "send_email", Arguments: `{"to":"a@example.org"}`})
	}()
	if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="deciding-for"]`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, admin, `[data-testid="deciding-for"]`); !strings.Contains(got, "Deciding for Maya Member") {
		t.Fatalf("card: %q", got)
	}
	if n := eval[int](t, admin, `document.querySelectorAll('[data-testid="approval-card"] button[value="always"], [data-testid="approval-card"] button[value="approve_conversation"]').length`); n != 0 {
		t.Fatalf("a delegate is offered %d standing answers", n)
	}
	screenshot(t, admin, "inbox-deciding-for")
	// The delegate's open inbox hears of Maya's next call without a reload.
	go func() {
		_, _ = rt.Gate(waiting, client.Call{CallID: "away-2", User: dev.DemoMember.Subject, ConversationID: "c", TurnID: "t",
			Connector: "mail", Tool: "send_email", Arguments: `{"to":"b@example.org"}`})
	}()
	if _, err := chromedp.Run(admin, chromedp.Poll[bool](`document.querySelectorAll('[data-testid="approval-card"]').length === 2`)); err != nil {
		t.Fatalf("Maya's second call did not reach her delegate's open inbox: %v", err)
	}
	if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/delegations"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="delegations-open"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, admin, "admin-delegations")
	if _, err := e.DB.SetToolPolicy(context.Background(), approval.SystemActor, "mail", "send_email", approval.Policy{
		Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
		t.Fatal(err)
	}
}

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone data")
	}
	return loc
}

// Escalation, as people see it: the admin sets a backup team and a delay on
// the policy form; Avery (on call) has her inbox open; a minute's wait is
// too long for a test, so the delay is one second: Maya's call appears in
// Avery's open inbox once it escalates, marked "Escalated to oncall after
// 1 second".
func TestEscalationCard(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	admin := newTab(t)
	signIn(t, admin, e, "admin")
	for _, s := range []string{`INSERT INTO teams (name, source) VALUES ('oncall', 'admin')`,
		`INSERT INTO team_members (team, subject, source) VALUES ('oncall', 'demo-admin', 'admin')`} {
		if _, err := e.DB.Pool.Exec(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/policies"),
		chromedp.Click(chromedp.CSS(`tr[data-tool="send_email"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="escalation-field"]`)),
		chromedp.SetValue(chromedp.CSS(`#escalate-to`), "oncall"),
		chromedp.SendKeys(chromedp.CSS(`#escalate-after`), "1s"))
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, admin, "policy-escalation")
	if err := chromedp.Do(admin, chromedp.Click(chromedp.CSS(`button[value="save"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, admin, `.flash`); !strings.Contains(got, "escalation added: to oncall after 1 second") {
		t.Fatalf("flash: %q", got)
	}
	if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="user-name"]`)),
		chromedp.Sleep(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	waiting, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() {
		_, _ = rt.Gate(waiting, client.Call{CallID: "esc-1", User: dev.DemoMember.Subject, ConversationID: "c", TurnID: "t",
			Connector: "mail", Tool: "send_email", Arguments: `{"to":"a@example.org"}`})
	}()
	if _, err := chromedp.Run(admin, chromedp.Poll[bool](`!!document.querySelector('[data-testid="escalated"]')`)); err != nil {
		t.Fatalf("the escalated call did not reach the backup's open inbox: %v", err)
	}
	if got := text(t, admin, `[data-testid="escalated"]`); !strings.Contains(got, "Escalated to oncall after 1 second") {
		t.Fatalf("card: %q", got)
	}
	screenshot(t, admin, "inbox-escalated")
}
