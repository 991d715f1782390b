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

// until waits for a script condition, failing with what after 15 seconds.
func until(t *testing.T, ctx context.Context, js, what string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		title, _ := chromedp.Run(ctx, chromedp.Title())
		main, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main').innerHTML`))
		t.Fatalf("%s: %v (title %q)\n%s", what, err, title, main)
	}
}

// approvalID waits for the pending item of a call and returns its id.
func approvalID(t *testing.T, e *testenv.Env, callID string) string {
	t.Helper()
	var id string
	deadline := time.Now().Add(10 * time.Second)
	for e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE call_id = $1`, callID).Scan(&id) != nil {
		if time.Now().After(deadline) {
			t.Fatal("no pending item for", callID)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return id
}

func memberCall(id, connector, tool, args string) client.Call {
	return client.Call{CallID: id, User: dev.DemoMember.Subject, ConversationID: "conv-page", TurnID: "turn-1",
		Connector: connector, Tool: tool, Arguments: args, Reason: "Confirm the payment date."}
}

// openRequest opens a request's page and waits until it listens for changes.
func openRequest(t *testing.T, ctx context.Context, e *testenv.Env, id string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/approvals/"+id)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, `!!document.querySelector('#approval-page') && (!document.querySelector('[data-live]') || !!document.querySelector('.live.on'))`, "the page did not connect")
	eval[bool](t, ctx, `window.__sameDocument = true`)
}

func TestRequestPage(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")

	t.Run("DecideOnThePage", func(t *testing.T) {
		c := memberCall("page-1", "mail", "send_email", `{"to":"finance@acme.example","subject":"Invoice 4471","body":"Scheduled for Friday."}`)
		res := gate(rt, c)
		id := approvalID(t, e, c.CallID)
		openRequest(t, ctx, e, id)
		if got := text(t, ctx, `#approval-page [data-testid="tool-name"]`); got != "Send email" {
			t.Fatalf("tool %q", got)
		}
		if got := eval[string](t, ctx, `document.title`); got != "(1) Request · Countersign" {
			t.Fatalf("title %q", got)
		}
		screenshot(t, ctx, "request-pending")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#approval-page button[value="approve"]`))); err != nil {
			t.Fatal(err)
		}
		if r := result(t, res); !r.Out.Allowed {
			t.Fatal(r)
		}
		// The runtime claims the call as soon as it is approved: it may
		// have run by the time the page shows the outcome.
		until(t, ctx, `['Approved', 'Approved and run'].includes((document.querySelector('[data-testid="outcome-label"]') || {}).textContent)`, "no outcome on the page")
		who := text(t, ctx, `[data-testid="outcome-who"]`)
		if !strings.Contains(who, "Decided by "+dev.DemoMember.Name) {
			t.Fatalf("who %q", who)
		}
		if loc := eval[string](t, ctx, `location.pathname`); loc != "/approvals/"+id || !eval[bool](t, ctx, `window.__sameDocument === true`) {
			t.Fatalf("left the page for %q", loc)
		}
		until(t, ctx, `document.title === 'Request · Countersign'`, "the title still counts the call")
		screenshot(t, ctx, "request-decided")
	})

	t.Run("DecidedElsewhereUpdatesThePage", func(t *testing.T) {
		c := memberCall("page-2", "files", "delete_file", `{"path":"/shared/reports/q2.xlsx"}`)
		res := gate(rt, c)
		id := approvalID(t, e, c.CallID)
		openRequest(t, ctx, e, id)
		other := e.NewBrowser()
		other.T = t
		other.SignIn("member")
		if resp, _ := other.PostForm("/approvals/"+id+"/decision", map[string][]string{"decision": {"reject"}, "reason": {"Keep it"}}); resp.StatusCode != 303 {
			t.Fatal(resp.StatusCode)
		}
		until(t, ctx, `(document.querySelector('[data-testid="outcome-label"]') || {}).textContent === 'Rejected'`, "the open page did not show the decision")
		if !eval[bool](t, ctx, `window.__sameDocument === true`) || eval[int](t, ctx, `document.querySelectorAll('form.decide').length`) != 0 {
			t.Fatal("the page reloaded, or is still decidable")
		}
		if got := text(t, ctx, `[data-testid="outcome-reason"]`); !strings.Contains(got, "Keep it") {
			t.Fatalf("reason %q", got)
		}
		result(t, res)
	})

	t.Run("ErrOtherUser", func(t *testing.T) {
		c := memberCall("page-3", "mail", "send_email", `{"to":"secret-recipient@acme.example"}`)
		res := gate(rt, c)
		id := approvalID(t, e, c.CallID)
		admin := newTab(t)
		signIn(t, admin, e, "admin")
		if err := chromedp.Do(admin, chromedp.Navigate(e.BaseURL+"/approvals/"+id), chromedp.WaitVisible(chromedp.CSS(`[data-testid="error-page"]`))); err != nil {
			t.Fatal(err)
		}
		body := eval[string](t, admin, `document.body.textContent`)
		if !strings.Contains(body, "404") || strings.Contains(body, "secret-recipient") || strings.Contains(body, "Send email") {
			t.Fatalf("other user's view: %q", body)
		}
		if !strings.Contains(e.Logs(), "request page refused") {
			t.Fatal("attempt not logged")
		}
		openRequest(t, ctx, e, id)
		_ = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#approval-page button[value="reject"]`)))
		result(t, res)
	})
}

// The tab title counts waiting calls live, on the inbox and on other pages.
func TestTabTitleCountsLive(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	other := e.NewBrowser()
	other.T = t
	other.SignIn("member")
	n := 0
	arriveAndDecide := func(t *testing.T, base string) {
		n++
		if !strings.HasPrefix(eval[string](t, ctx, `document.title`), base) {
			t.Fatalf("title before: %q", eval[string](t, ctx, `document.title`))
		}
		c := memberCall("title-"+string(rune('a'+n)), "mail", "send_email", `{"to":"a@acme.example"}`)
		res := gate(rt, c)
		id := approvalID(t, e, c.CallID)
		until(t, ctx, `document.title === '(1) `+base+`'`, "the title did not count the new call")
		until(t, ctx, `document.querySelector('link[data-favicon]').href.startsWith('data:image/svg+xml')`, "no badge on the favicon")
		if resp, _ := other.PostForm("/approvals/"+id+"/decision", map[string][]string{"decision": {"approve"}}); resp.StatusCode != 303 {
			t.Fatal(resp.StatusCode)
		}
		until(t, ctx, `document.title === '`+base+`'`, "the title still counts the decided call")
		until(t, ctx, `document.querySelector('link[data-favicon]').href.endsWith('/static/favicon.svg')`, "the badge stayed")
		if !eval[bool](t, ctx, `window.__sameDocument === true`) {
			t.Fatal("the page reloaded")
		}
		result(t, res)
	}
	t.Run("Inbox", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.live.on`))); err != nil {
			t.Fatal("event stream not connected:", err)
		}
		eval[bool](t, ctx, `window.__sameDocument = true`)
		arriveAndDecide(t, "Inbox · Countersign")
	})
	t.Run("AutoApprove", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/auto-approve")); err != nil {
			t.Fatal(err)
		}
		waitURL(t, ctx, "/auto-approve")
		eval[bool](t, ctx, `window.__sameDocument = true`)
		arriveAndDecide(t, "Auto-approve · Countersign")
	})
}
