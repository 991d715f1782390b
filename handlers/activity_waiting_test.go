package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
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
	if !strings.Contains(body, "No decided calls yet") || strings.Contains(body, "<strong>No calls</strong>") {
		t.Fatal("with a call waiting and none decided, the empty list says there are no calls")
	}
	if s, _ := decide(l.Member, id, "reject"); s >= 400 {
		t.Fatalf("reject: %d", s)
	}
	_, body = l.Member.Get("/activity")
	if strings.Contains(body, `data-testid="activity-decide"`) {
		t.Fatal("a decided call is still listed as waiting")
	}
}

// Activity lists the person's agents' calls that wait for someone else
// (issue 42): Maya's two-of-finance payment says who decides and how far
// the quorum got, with no link to a request page she may not open; Finn,
// who may decide it, has it with a link to decide it; a decided call
// leaves both lists; a team key's call is listed only to its team.
func TestActivityListsCallsWaitingForOthers(t *testing.T) {
	l := newOrgLoop(t)
	pay := l.payment(t, 25000)
	deploy := l.deploy(t)
	waiting := func(b *testenv.Browser) map[string]string {
		_, body := b.Get("/activity")
		out := map[string]string{}
		for _, r := range testIDs(parseHTML(t, body), "activity-waiting-row") {
			out[attr(r, "data-approval-id")] = nodeText(r) + fmt.Sprintf(" | decide-links=%d", len(testIDs(r, "activity-decide")))
		}
		return out
	}
	maya := waiting(l.Member)
	if got := maya[pay]; !strings.Contains(got, "Waits for two of finance") || !strings.Contains(got, "0 of 2 approved") ||
		!strings.HasSuffix(got, "decide-links=0") {
		t.Fatalf("Maya's row of her payment: %q", got)
	}
	if got := maya[deploy]; !strings.HasSuffix(got, "decide-links=1") || strings.Contains(got, "Waits for") {
		t.Fatalf("Maya (in platform) reads the platform key's call as %q", got)
	}
	finn := waiting(l.Finn)
	if got := finn[pay]; !strings.HasSuffix(got, "decide-links=1") || strings.Contains(got, "Waits for") {
		t.Fatalf("Finn's row of the payment: %q", got)
	}
	if got, ok := finn[deploy]; ok {
		t.Fatalf("Finn (not in platform) sees the platform key's call: %q", got)
	}
	if status, _, _ := page(t, l.Member, pay); status != http.StatusNotFound {
		t.Fatalf("Maya opens the request page of her quorum call: %d", status)
	}
	if s, _ := decide(l.Finn, pay, "approve"); s != http.StatusSeeOther {
		t.Fatalf("Finn approves: %d", s)
	}
	if got := waiting(l.Member)[pay]; !strings.Contains(got, "1 of 2 approved") {
		t.Fatalf("after Finn's approval Maya reads %q", got)
	}
	approvedRows := func() int {
		_, body := l.Member.Get("/activity")
		return strings.Count(body, `data-outcome="approved"`)
	}
	// Finn's approval is a vote: the call has not ended, so Activity does
	// not list it as approved.
	if n := approvedRows(); n != 0 {
		t.Fatalf("after one vote of two, Activity lists %d approved calls", n)
	}
	if s, _ := decide(l.Fiona, pay, "approve"); s != http.StatusSeeOther {
		t.Fatalf("Fiona approves: %d", s)
	}
	if got, ok := waiting(l.Member)[pay]; ok {
		t.Fatalf("an approved call is still waiting: %q", got)
	}
	if n := approvedRows(); n != 1 {
		t.Fatalf("after the quorum was met, Activity lists %d approved calls, want 1", n)
	}
	// Its line names every approval that counted, as decided_by does.
	_, body := l.Member.Get("/activity")
	for _, r := range testIDs(parseHTML(t, body), "activity-row") {
		if attr(r, "data-outcome") == "approved" {
			if got := nodeText(r); !strings.Contains(got, "Approved by Finn Finance, Fiona Finance") {
				t.Fatalf("the quorum's line reads %q", got)
			}
		}
	}
	// Its row links to no request page Maya cannot open (404); a call she
	// decided herself links to its page.
	mail := l.pending(t, l.call("mail", "send_email", `{"to":"activity-link@example.org"}`))
	if s, _ := decide(l.Member, mail, "reject"); s != http.StatusSeeOther {
		t.Fatalf("Maya rejects her own mail: %d", s)
	}
	_, body = l.Member.Get("/activity")
	if strings.Contains(body, `href="/approvals/`+pay+`"`) || !strings.Contains(body, `href="/approvals/`+mail+`"`) {
		t.Fatal("Activity links Maya to a request page she cannot open, or not to her own")
	}
	if _, ok := waiting(l.Finn)[pay]; ok {
		t.Fatal("an approved call still waits for Finn")
	}
}

// A waiting row's connector, agent and times are kept apart by their
// separators (templ once read the text after a component as its
// children, and the row read "Calendartest runtimejust now").
func TestActivityWaitingRowSeparators(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("calendar", "create_event", `{"title":"Standup"}`))
	_, body := l.Member.Get("/activity")
	for _, r := range testIDs(parseHTML(t, body), "activity-waiting-row") {
		if attr(r, "data-approval-id") != id {
			continue
		}
		got := strings.Join(strings.Fields(nodeText(testIDs(r, "activity-waiting-meta")[0])), " ")
		if !strings.HasPrefix(got, "Calendar · test runtime · asked ") {
			t.Fatalf("the row reads %q", got)
		}
		return
	}
	t.Fatal("the waiting call is not listed")
}
