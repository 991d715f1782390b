package handlers_test

import (
	"strings"
	"testing"
)

// TestActivityListsWaitingCalls: Activity lists the calls still waiting
// for the person's answer, each with a link to decide it (issue 42); a
// decided call leaves that list.
func TestActivityListsWaitingCalls(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("calendar", "create_event", `{"title":"Standup"}`))
	_, body := l.Member.Get("/activity")
	if !strings.Contains(body, `data-testid="activity-waiting"`) || !strings.Contains(body, `href="/approvals/`+id+`" data-testid="activity-decide"`) {
		t.Fatal("the waiting call is not listed with a link to decide it")
	}
	if s, _ := decide(l.Member, id, "reject"); s >= 400 {
		t.Fatalf("reject: %d", s)
	}
	_, body = l.Member.Get("/activity")
	if strings.Contains(body, `data-testid="activity-decide"`) {
		t.Fatal("a decided call is still listed as waiting")
	}
}
