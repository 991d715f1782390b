package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

func TestPolicyAndAutoApprove(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	member := newTab(t)
	signIn(t, member, e, "member")
	n := 0
	call := func(tool, conv string) client.Call {
		n++
		return client.Call{CallID: "p-" + string(rune('a'+n)), User: dev.DemoMember.Subject, ConversationID: conv, TurnID: "t1",
			Connector: "calendar", Tool: tool, Arguments: `{"n":` + string(rune('0'+n%10)) + `}`}
	}
	// approveVia answers the call's card in the member's inbox.
	approveVia := func(c client.Call, decision string) {
		t.Helper()
		res := gate(rt, c)
		sel := cardFor(t, member, e, c.CallID) + ` button[value="` + decision + `"]`
		if err := chromedp.Do(member, chromedp.Click(chromedp.CSS(sel))); err != nil {
			t.Fatal(err)
		}
		if r := result(t, res); !r.Out.Allowed {
			t.Fatal(r)
		}
	}
	approveVia(call("create_event", "c2"), "approve_conversation")
	approveVia(call("create_event", "c1"), "always")
	if out, _ := rt.Gate(context.Background(), call("create_event", "c3")); out.Via != "always_allow" {
		t.Fatal(out)
	}

	// The admin tightens the tool: the impact preview counts the grants.
	admin := newTab(t)
	signIn(t, admin, e, "admin")
	err := chromedp.Do(admin,
		chromedp.Navigate(e.BaseURL+"/admin/policies"),
		chromedp.Click(chromedp.CSS(`tr[data-tool="create_event"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="policy-form"]`)),
		chromedp.Click(chromedp.CSS(`input[name="standing_approval"]`)),
		chromedp.Click(chromedp.CSS(`button[value="save"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="impact"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	impact := text(t, admin, `[data-testid="impact"]`)
	if !strings.Contains(impact, "1 “Always allow” grant, 1 conversation grant and 0 playbook pre-approvals will lapse") {
		t.Fatalf("impact: %q", impact)
	}
	screenshot(t, admin, "policy-impact")
	if err := chromedp.Do(admin, chromedp.Click(chromedp.CSS(`[data-testid="confirm-save"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, admin, "policies")

	// The member's next call prompts despite the earlier Always allow.
	res := gate(rt, call("create_event", "c1"))
	if err := chromedp.Do(member, chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-card"]`))); err != nil {
		t.Fatal("no prompt after tightening:", err)
	}
	buttons := eval[[]string](t, member, `[...document.querySelectorAll('[data-testid="approval-card"] button')].map(b => b.value)`)
	if strings.Join(buttons, ",") != "approve,reject" {
		t.Fatalf("buttons after removing standing approval: %v", buttons)
	}
	if err := chromedp.Do(member, chromedp.Click(chromedp.CSS(`[data-testid="approval-card"] button[value="reject"]`))); err != nil {
		t.Fatal(err)
	}
	if r := result(t, res); r.Out.Allowed || r.Out.Code != "approval_denied" {
		t.Fatal(r)
	}

	// The Auto-approve tab shows the lapse; restoring standing approval and
	// granting anew, then revoking on the tab, makes the next call prompt.
	if err := chromedp.Do(member, chromedp.Navigate(e.BaseURL+"/auto-approve"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="lapsed"]`))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(t, member, `[data-testid="lapsed-why"]`), "Permission settings changed") {
		t.Fatal("lapse reason")
	}
	if out, err := rt.Gate(context.Background(), call("list_events", "c1")); err != nil || !out.Allowed {
		t.Fatal(out, err)
	}
	// Mail's send_email still offers standing approval (confirmed a second
	// time: it sends data out).
	del := call("create_event", "c5")
	del.Connector, del.Tool = "mail", "send_email"
	if err := chromedp.Do(member, chromedp.Navigate(e.BaseURL+"/")); err != nil {
		t.Fatal(err)
	}
	res = gate(rt, del)
	if err := chromedp.Do(member, chromedp.Click(chromedp.CSS(cardFor(t, member, e, del.CallID)+` button[value="always"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm-standing"]`)), chromedp.Click(chromedp.CSS(`[data-testid="confirm-standing"]`))); err != nil {
		t.Fatal(err)
	}
	if r := result(t, res); !r.Out.Allowed {
		t.Fatal(r)
	}
	del2 := del
	del2.CallID += "-2"
	if out, _ := rt.Gate(context.Background(), del2); out.Via != "always_allow" {
		t.Fatal(out)
	}
	if err := chromedp.Do(member, chromedp.Navigate(e.BaseURL+"/auto-approve")); err != nil {
		t.Fatal(err)
	}
	screenshot(t, member, "auto-approve")
	if err := chromedp.Do(member,
		chromedp.Click(chromedp.CSS(`tr[data-testid="grant-row"]:not(:has([data-testid="lapsed"])) button`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}
	del3 := del
	del3.CallID += "-3"
	res = gate(rt, del3)
	if err := chromedp.Do(member, chromedp.Navigate(e.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-card"]`))); err != nil {
		t.Fatal("no prompt after revoking:", err)
	}
	if err := chromedp.Do(member, chromedp.Click(chromedp.CSS(`[data-testid="approval-card"] button[value="reject"]`))); err != nil {
		t.Fatal(err)
	}
	if r := result(t, res); r.Out.Code != "approval_denied" {
		t.Fatal(r)
	}
}
