package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// Recent decisions link to their request and say which call each was; a
// call nobody answered says so.
func TestRecentDecisions(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	bg := context.Background()
	ok := memberCall("recent-1", "calendar", "create_event", `{"title":"Board review"}`)
	late := memberCall("recent-2", "calendar", "create_event", `{"title":"Budget sync"}`)
	gate(rt, ok)
	gate(rt, late)
	okID, lateID := approvalID(t, e, ok.CallID), approvalID(t, e, late.CallID)
	if _, err := e.DB.Decide(bg, okID, e.User(dev.DemoMember.Subject), approval.Approve, ""); err != nil {
		t.Fatal(err)
	}
	_, _ = e.DB.Pool.Exec(bg, `UPDATE approvals SET expires_at = now() WHERE id = $1`, lateID)
	if _, err := e.DB.ExpireDue(bg, 10); err != nil {
		t.Fatal(err)
	}
	waitInbox(t, ctx, e, 0)
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="recent-row"]')].map(r =>
		r.querySelector('[data-testid="recent-link"]').getAttribute('href') + '|' + r.querySelector('[data-testid="recent-outcome"]').textContent + '|' +
		r.querySelector('[data-testid="recent-gist"]').textContent + '|' + r.querySelector('[data-testid="agent-key"]').textContent.trim())`)
	want := map[string]string{okID: "Approved|title: Board review|test runtime", lateID: "Expired — nobody answered|title: Budget sync|test runtime"}
	if len(rows) != 2 {
		t.Fatalf("recent rows %q", rows)
	}
	for _, r := range rows {
		href, rest, _ := strings.Cut(r, "|")
		id := strings.TrimPrefix(href, "/approvals/")
		if want[id] != rest {
			t.Fatalf("row %q, want %q", r, want[id])
		}
	}
}

// A call that arrives while the last waiting card is being read waits
// behind "1 new — show"; once that card is answered, nothing else waits,
// and the new call shows by itself.
func TestHeldCallShowsWhenNothingElseWaits(t *testing.T) {
	e := testenv.NewEnv(t)
	rt := runtime(t, e)
	ctx := newTab(t)
	signIn(t, ctx, e, "member")
	first := memberCall("held-1", "calendar", "create_event", `{"title":"First"}`)
	gate(rt, first)
	approvalID(t, e, first.CallID)
	waitInbox(t, ctx, e, 1)
	second := memberCall("held-2", "calendar", "create_event", `{"title":"Second"}`)
	gate(rt, second)
	id := approvalID(t, e, second.CallID)
	until(t, ctx, `!!document.querySelector('#pending-new li[data-approval-id="`+id+`"]') && !document.querySelector('[data-new-bar]').hidden`, "the new call was not held")
	reject(t, ctx, `#pending-list li[data-approval-id]`)
	until(t, ctx, `!!document.querySelector('#pending-list li[data-approval-id="`+id+`"]') && document.querySelector('[data-new-bar]').hidden`, "the held call did not show once nothing else waited")
}
