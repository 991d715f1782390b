package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// activityCall asks about one call of the demo member's agent and returns
// the answer.
func activityCall(t *testing.T, rt *client.Client, n int, connector, tool string) map[string]any {
	t.Helper()
	var out map[string]any
	call := client.Call{CallID: fmt.Sprint("act-", n), User: dev.DemoMember.Subject, ConversationID: "conv-act",
		ConversationTitle: "Quarterly planning", TurnID: fmt.Sprint("turn-", n), Connector: connector, Tool: tool,
		Arguments: fmt.Sprintf(`{"n":%d}`, n)}
	if err := rt.Do(context.Background(), "POST", "/api/v1/tool-calls", call, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The Activity page in a browser: every kind of call says what decided it,
// a grant is revoked from its row and the page keeps its filter, and the
// page passes axe in light and dark mode and fits a phone.
func TestActivityPage(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	member := e.NewBrowser()
	member.T = t
	member.SignIn("member")
	decide := func(id, decision, reason string) {
		t.Helper()
		if resp, _ := member.PostForm("/approvals/"+id+"/decision", url.Values{"decision": {decision}, "reason": {reason}}); resp.StatusCode >= 400 {
			t.Fatalf("decide %s: %d", decision, resp.StatusCode)
		}
	}
	pendingID := func(out map[string]any) string {
		t.Helper()
		a, ok := out["approval"].(map[string]any)
		if !ok {
			t.Fatalf("not pending: %v", out)
		}
		return a["id"].(string)
	}
	activityCall(t, rt, 1, "mail", "search_messages")                                           // allowed by policy
	decide(pendingID(activityCall(t, rt, 2, "calendar", "create_event")), "always", "")         // approved, a grant
	activityCall(t, rt, 3, "calendar", "create_event")                                          // allowed by the grant
	decide(pendingID(activityCall(t, rt, 4, "files", "delete_file")), "reject", "not that one") // rejected

	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.nav a[href="/activity"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="activity-list"]`))); err != nil {
		t.Fatal(err)
	}
	whys := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="activity-why"]')].map(e => e.textContent.trim())`)
	want := []string{"Rejected by Maya Member: not that one", "Allowed by your standing approval for this tool in any conversation",
		"Approved by Maya Member, with a standing approval", "Allowed by policy — rule: allow without asking"}
	if strings.Join(whys, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the rows say:\n%s\nwant:\n%s", strings.Join(whys, "\n"), strings.Join(want, "\n"))
	}
	// A call allowed without an item is named by its conversation's title
	// too, as the runtime sent it with the conversation's items.
	if where := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="activity-row"] .activity-meta')].map(e => e.textContent)`); len(where) != 4 ||
		!strings.Contains(where[3], "Quarterly planning") || !strings.Contains(where[1], "Quarterly planning") {
		t.Fatalf("the rows' conversations: %q", where)
	}
	checkAxe(t, ctx, "activity")
	screenshot(t, ctx, "activity")

	t.Run("Dark", func(t *testing.T) {
		if err := chromedp.Do(ctx, dark(true)); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = chromedp.Do(ctx, dark(false)) }()
		checkAxe(t, ctx, "activity, dark")
		screenshot(t, ctx, "activity-dark")
	})

	t.Run("Phone", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Sleep(300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		defer desktop(ctx)
		if eval[bool](t, ctx, `document.documentElement.scrollWidth > innerWidth`) {
			t.Fatal("the Activity page scrolls sideways at 390 px")
		}
		if !eval[bool](t, ctx, `(() => { const b = document.querySelector('[data-testid="activity-revoke"]').getBoundingClientRect(); return b.width > 0 && b.right <= innerWidth; })()`) {
			t.Fatal("Revoke is not within the screen at 390 px")
		}
		checkAxe(t, ctx, "activity, phone")
	})

	t.Run("RevokeFromTheRow", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/activity?outcome=allowed"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="activity-revoke"]`))); err != nil {
			t.Fatal(err)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="activity-row"]').length`); n != 2 {
			t.Fatalf("%d allowed calls, want 2", n)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="activity-revoke"]`))); err != nil {
			t.Fatal(err)
		}
		waitURL(t, ctx, "/activity?outcome=allowed")
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
			t.Fatal(err)
		}
		if f := text(t, ctx, `.flash`); !strings.Contains(f, "Revoked") {
			t.Fatalf("flash: %q", f)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="activity-revoke"]').length`); n != 0 {
			t.Fatal("Revoke still offered after the revoke")
		}
		if sel := eval[string](t, ctx, `document.querySelector('#a-outcome').value`); sel != "allowed" {
			t.Fatalf("the filter after the revoke: %q", sel)
		}
		if out := activityCall(t, rt, 5, "calendar", "create_event"); out["decision"] != "pending" {
			t.Fatalf("the revoked grant still allows: %v", out)
		}
	})
}
