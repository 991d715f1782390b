package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// TestScopedGrant is "Always allow calls like this" as a person clicks it:
// the card shows the scope the server proposes, the person confirms it,
// the agent's next `npm test` runs without asking while a chain with
// `rm -rf ~` still asks; the Auto-approve tab says what the grant covers,
// and an admin revokes it from the tool's policy page. With
// COUNTERSIGN_SCREENSHOTS set it renders scoped-*.png.
func TestScopedGrant(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	call := func(id, cmd string) client.Call {
		return client.Call{CallID: id, User: dev.DemoMember.Subject, ConversationID: "conv-7", TurnID: "turn-" + id,
			Connector: "system", Tool: "run_command", Reason: "Run the tests after the change.",
			Arguments: `{"command":` + jsonQuote(cmd) + `}`}
	}
	first := gate(rt, call("sc1", "npm test -- --watch && git status"))
	card := cardFor(t, ctx, e, "sc1")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(card+` [data-testid="scoped-open"]`)),
		chromedp.WaitVisible(chromedp.CSS(card+` [data-testid="confirm-scoped"]`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, card+` [data-testid="scoped"]`); !strings.Contains(got, "commands starting with npm test") ||
		!strings.Contains(got, "commands starting with git status") || !strings.Contains(got, "sudo") {
		t.Fatalf("scope chooser says %q", got)
	}
	checkAxe(t, ctx, "scope chooser")
	screenshot(t, ctx, "scoped-confirm")
	// Narrow the second command to exactly `git status`.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(card+` select[name="scope"]:nth-of-type(1)`), "0:prefix"),
		chromedp.Click(chromedp.CSS(card+` [data-testid="confirm-scoped"]`))); err != nil {
		t.Fatal(err)
	}
	if r := result(t, first); r.Err != nil || !r.Out.Allowed {
		t.Fatalf("the call the person allowed: %+v", r)
	}
	if r := result(t, gate(rt, call("sc2", "npm test"))); r.Err != nil || !r.Out.Allowed || r.Out.Via != "always_allow" {
		t.Fatalf("npm test after the scoped grant: %+v", r)
	}
	chained := gate(rt, call("sc3", "npm test && rm -rf ~"))
	cardFor(t, ctx, e, "sc3") // asks
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/auto-approve")); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, `[data-testid="grant-scoped"]`); !strings.Contains(got, "Calls like this: commands starting with npm test or git status") {
		t.Fatalf("Auto-approve tab says %q", got)
	}
	checkAxe(t, ctx, "auto-approve with a scoped grant")
	screenshot(t, ctx, "scoped-autoapprove")

	admin := newTab(t)
	signIn(t, admin, e, "admin")
	var toolID string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM tools WHERE connector = 'system' AND name = 'run_command'`).Scan(&toolID); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/admin/policies/"+toolID),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="scoped-grant-row"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, admin, "scoped-policy")
	if err := chromedp.Do(admin, chromedp.Click(chromedp.CSS(`[data-testid="scoped-grant-row"] button`))); err != nil {
		t.Fatal(err)
	}
	// The page reloads (a redirect to itself): ride out the navigation.
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := chromedp.Run(admin, chromedp.Poll[bool](`document.readyState === 'complete' &&
			document.querySelector('[data-testid="scoped-grants"]') !== null &&
			document.querySelectorAll('[data-testid="scoped-grant-row"]').length === 0`))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the grant is still listed after Revoke:", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/")); err != nil {
		t.Fatal(err)
	}
	again := gate(rt, call("sc4", "npm test"))
	cardFor(t, ctx, e, "sc4") // asks again
	_, _ = chained, again
}

func jsonQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
