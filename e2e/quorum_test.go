package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// TestQuorumInBrowsers: two of finance approve Maya's agent's big payment,
// each in their own browser, the card saying how far it got; the runtime
// waiting on the call runs it once both are in.
func TestQuorumInBrowsers(t *testing.T) {
	e := testenv.NewEnv(t)
	ctx := context.Background()
	rt := runtime(t, e)
	if err := rt.SyncConnector(ctx, "payments", client.Connector{DisplayName: "Payments", Kind: "connector",
		Tools: []client.ConnectorTool{{Name: "send", DisplayName: "Send payment"}}}); err != nil {
		t.Fatal(err)
	}
	// Signing in brings the finance team from the provider's groups; a
	// policy may name only a team that exists.
	maya, finn, fiona := newTab(t), newTab(t), newTab(t)
	signIn(t, maya, e, "member")
	signIn(t, finn, e, "finn")
	signIn(t, fiona, e, "fiona")
	if _, err := e.DB.SetToolPolicy(ctx, approval.SystemActor, "payments", "send", approval.Policy{Mode: approval.ModeRequireApproval,
		StandingApproval: true, Rule: approval.DeciderRule{Deciders: approval.DecidersQuorum, Team: "finance", Quorum: 2},
		DecidersCondition: "args.amount > 10000"}); err != nil {
		t.Fatal(err)
	}

	gated := make(chan client.Outcome, 1)
	go func() {
		out, err := rt.GateWithin(ctx, client.Call{CallID: "pay-1", User: dev.DemoMember.Subject, ConversationID: "conv", TurnID: "t",
			Connector: "payments", Tool: "send", Arguments: `{"amount": 25000, "to": "ACME GmbH"}`, Reason: "Pay the Acme invoice."}, time.Minute)
		if err != nil {
			t.Error(err)
		}
		gated <- out
	}()
	card := `[data-testid="approval-card"]`
	// The call arrives live in Finn's inbox.
	if _, err := chromedp.Run(finn, chromedp.Poll[bool](`document.querySelector('#pending-list [data-testid="approval-card"], #pending-new [data-testid="approval-card"]') !== null`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(finn, chromedp.Navigate(e.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(card))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, finn, `[data-testid="quorum-progress"]`); got != "0 of 2 approved" {
		t.Fatalf("Finn's card: %q", got)
	}
	screenshot(t, finn, "quorum-card")
	if err := chromedp.Do(fiona, chromedp.Navigate(e.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(card)),
		chromedp.WaitVisible(chromedp.CSS(`[data-live]`))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(fiona, chromedp.Poll[bool](`document.querySelector('[data-live]').textContent.includes('Live')`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(finn, chromedp.Click(chromedp.CSS(card+` button[value="approve"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="you-approved"]`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, finn, `[data-testid="quorum-progress"]`); got != "1 of 2 approved" {
		t.Fatalf("after Finn's approval: %q", got)
	}
	screenshot(t, finn, "quorum-card-voted")
	admin := newTab(t)
	signIn(t, admin, e, "admin")
	if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/pending"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="overview-row"]`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, admin, `[data-testid="overview-deciders"]`); !strings.Contains(got, "two of finance") || !strings.Contains(got, "1 of 2 approved") {
		t.Fatalf("the overview says %q", got)
	}
	if eval[bool](t, admin, `document.querySelector('button[value="approve"], [data-testid="overview-row"] a') !== null`) {
		t.Fatal("the overview offers the admin a decision no rule gives them")
	}
	screenshot(t, admin, "org-admin-pending")
	select {
	case out := <-gated:
		t.Fatalf("the call ran on one approval: %+v", out)
	default:
	}

	// Fiona's open inbox shows Finn's approval live, without a reload.
	if _, err := chromedp.Run(fiona, chromedp.Poll[bool](`document.querySelector('[data-testid="quorum-progress"]').textContent === '1 of 2 approved'`)); err != nil {
		t.Fatalf("Fiona's card never showed Finn's approval: %v", err)
	}
	if err := chromedp.Do(fiona, chromedp.Click(chromedp.CSS(card+` button[value="approve"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="decided-card"]`))); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-gated:
		if !out.Allowed {
			t.Fatalf("after two approvals: %+v", out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the runtime never ran the call")
	}

	for _, page := range []string{"/admin/teams", "/settings"} {
		if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+page), chromedp.WaitVisible(chromedp.CSS("h1"))); err != nil {
			t.Fatal(err)
		}
		screenshot(t, admin, "org"+pageName(page))
	}
	var id int
	if err := e.DB.Pool.QueryRow(ctx, `SELECT id FROM tools WHERE name = 'send' AND connector = 'payments'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/policies/"+itoa(id)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="deciders-field"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, admin, "org-policy-deciders")
}

func pageName(p string) string {
	out := []byte(p)
	for i := range out {
		if out[i] == '/' {
			out[i] = '-'
		}
	}
	return string(out)
}

func itoa(n int) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{digits[n%10]}, b...)
	}
	return string(b)
}
