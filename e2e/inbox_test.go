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

func TestSignInSeesInbox(t *testing.T) {
	e := testenv.NewEnv(t)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	if got := text(t, ctx, `[data-testid="user-name"]`); got != dev.DemoMember.Name {
		t.Fatalf("signed in as %q", got)
	}
	if got := text(t, ctx, "h1"); got != "Inbox none waiting" {
		t.Fatalf("heading %q", got)
	}
	if !eval[bool](t, ctx, `getComputedStyle(document.querySelector('[data-testid="inbox-empty"]')).display !== 'none'`) {
		t.Fatal("empty state not shown")
	}
	// Sign out with the button.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`form[action="/auth/logout"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="sign-in"]`))); err != nil {
		t.Fatal(err)
	}
}

func TestLiveInbox(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.live.on`))); err != nil {
		t.Fatal("event stream not connected:", err)
	}
	eval[bool](t, ctx, `window.__sameDocument = true`)
	n := 0
	call := func(connector, tool, args, reason string) client.Call {
		n++
		return client.Call{CallID: "e2e-" + string(rune('a'+n)), User: dev.DemoMember.Subject, ConversationID: "conv-e2e",
			TurnID: "turn-1", Connector: connector, Tool: tool, Arguments: args, Reason: reason}
	}
	card := func(id string) string { return `li[data-approval-id="` + id + `"]` }
	// appears waits for the card of the call's pending item, without reload.
	appears := func(c client.Call) string {
		t.Helper()
		start := time.Now()
		var id string
		for e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE call_id = $1`, c.CallID).Scan(&id) != nil {
			if time.Since(start) > 10*time.Second {
				t.Fatal("no pending item for", c.CallID)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(card(id)))); err != nil {
			t.Fatal("card did not appear:", err)
		}
		t.Logf("card for %s.%s appeared %s after the call", c.Connector, c.Tool, time.Since(start).Round(time.Millisecond))
		// A person can't click within htmx's settle delay; wait until the
		// new card is wired up, so the click goes through htmx.
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!document.querySelector('`+card(id)+`').classList.contains('htmx-added')`)); err != nil {
			t.Fatal(err)
		}
		if !eval[bool](t, ctx, `window.__sameDocument === true`) {
			t.Fatal("the page reloaded")
		}
		return id
	}

	t.Run("Approve", func(t *testing.T) {
		c := call("mail", "send_email", `{"to":"finance@acme.example","subject":"Invoice 4471","body":"Scheduled for Friday."}`, "Confirm the payment date.")
		res := gate(rt, c)
		id := appears(c)
		if got := text(t, ctx, card(id)+` [data-testid="tool-name"]`); got != "Send email" {
			t.Fatalf("tool %q", got)
		}
		keys := eval[[]string](t, ctx, `[...document.querySelectorAll('`+card(id)+` [data-testid="arg-key"]')].map(e => e.textContent)`)
		if strings.Join(keys, ",") != "to,subject,body" {
			t.Fatalf("keys %v", keys)
		}
		buttons := eval[[]string](t, ctx, `[...document.querySelectorAll('`+card(id)+` button')].map(e => e.textContent)`)
		if strings.Join(buttons, "|") != "Approve|Reject|Allow in this conversation|Always allow|Always allow calls like this" {
			t.Fatalf("buttons %v", buttons)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(card(id)+` button[value="approve"]`))); err != nil {
			t.Fatal(err)
		}
		r := result(t, res)
		if !r.Out.Allowed {
			t.Fatal(r)
		}
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="decided-card"]`))); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("RejectWithReason", func(t *testing.T) {
		c := call("files", "delete_file", `{"path":"/shared/reports/q3.xlsx"}`, "Clean up.")
		res := gate(rt, c)
		id := appears(c)
		if !eval[bool](t, ctx, `!!document.querySelector('`+card(id)+` [data-testid="destructive-warning"]')`) {
			t.Fatal("no warning on a destructive tool")
		}
		if err := chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.CSS(card(id)+` textarea`), "Keep Q3, delete Q2 instead"),
			chromedp.Click(chromedp.CSS(card(id)+` button[value="reject"]`))); err != nil {
			t.Fatal(err)
		}
		r := result(t, res)
		if r.Out.Allowed || r.Out.Code != "approval_denied" || !strings.Contains(r.Out.Message, "Keep Q3, delete Q2 instead") {
			t.Fatal(r)
		}
	})

	t.Run("AlwaysAllow", func(t *testing.T) {
		c := call("calendar", "create_event", `{"title":"Review"}`, "")
		res := gate(rt, c)
		id := appears(c)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(card(id)+` button[value="always"]`))); err != nil {
			t.Fatal(err)
		}
		if r := result(t, res); !r.Out.Allowed || r.Out.Scope != "always" {
			t.Fatal(r)
		}
		out, err := rt.Gate(context.Background(), call("calendar", "create_event", `{"title":"Another"}`, ""))
		if err != nil || !out.Allowed || out.Via != "always_allow" {
			t.Fatal(out, err)
		}
	})

	t.Run("DecidedElsewhereDisappears", func(t *testing.T) {
		c := call("mail", "delete_message", `{"message_id":"m-1"}`, "")
		res := gate(rt, c)
		id := appears(c)
		other := e.NewBrowser()
		other.SignIn("member")
		resp, _ := other.PostForm("/approvals/"+id+"/decision", map[string][]string{"decision": {"approve"}})
		if resp.StatusCode != 303 {
			t.Fatal(resp.StatusCode)
		}
		if err := chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(card(id)))); err != nil {
			t.Fatal("card decided in another browser stayed:", err)
		}
		if r := result(t, res); !r.Out.Allowed || r.Out.Via != "person" {
			t.Fatal(r)
		}
	})
}

func TestUntrustedTextIsEscaped(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := client.New(e.BaseURL, e.APIKey())
	markup := `<b id="tool-markup">Bold</b><img id="tool-img" src=x onerror="window.__xss=1">`
	err := rt.SyncConnector(context.Background(), "evil", client.Connector{DisplayName: `<i id="conn-markup">Evil</i>`, Kind: "connector",
		Tools: []client.ConnectorTool{{Name: "do_it", DisplayName: markup, Annotations: approval.Annotations{}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	res := gate(rt, client.Call{CallID: "x1", User: dev.DemoMember.Subject, ConversationID: "c", TurnID: "t",
		Connector: "evil", Tool: "do_it", Arguments: `{"note":"<img id=\"arg-img\" src=x onerror=alert(1)>","<script>k</script>":1}`,
		Reason: `<a id="reason-link" href="javascript:alert(1)">click</a>`})
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-card"]`))); err != nil {
		t.Fatal(err)
	}
	created := eval[int](t, ctx, `document.querySelectorAll('#tool-markup, #tool-img, #conn-markup, #arg-img, #reason-link, [data-testid="approval-card"] script').length`)
	if created != 0 || eval[bool](t, ctx, `window.__xss === 1`) {
		t.Fatal("untrusted text became HTML")
	}
	if got := text(t, ctx, `[data-testid="tool-name"]`); got != markup {
		t.Fatalf("tool name not shown as text: %q", got)
	}
	values := eval[string](t, ctx, `document.querySelector('[data-testid="arguments"]').textContent`)
	if !strings.Contains(values, `<img id="arg-img" src=x onerror=alert(1)>`) || !strings.Contains(values, "<script>k</script>") {
		t.Fatalf("argument text: %q", values)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button[value="reject"]`))); err != nil {
		t.Fatal(err)
	}
	if r := result(t, res); r.Out.Allowed || r.Out.Code != "approval_denied" {
		t.Fatal(r)
	}
}
