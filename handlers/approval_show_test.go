package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// doc is a fetched page, searched by data-testid.
type doc string

// page fetches a request's page as b.
func page(t *testing.T, b *testenv.Browser, id string) (int, doc, string) {
	t.Helper()
	resp, body := b.Get("/approvals/" + id)
	return resp.StatusCode, doc(body), body
}

// testid is the text of the first element with that data-testid, up to the
// end of the paragraph, list or element it is in, tags removed.
func testid(d doc, id string) string {
	m := regexp.MustCompile(`(?s)data-testid="` + id + `"[^>]*>(.*?)</(p|dl|span|li|h2|h3)>`).FindStringSubmatch(string(d))
	if m == nil {
		return ""
	}
	return textOf(m[1])
}

// has reports whether the page has a match for the pattern.
func (d doc) has(pattern string) bool { return regexp.MustCompile(pattern).MatchString(string(d)) }

func TestApprovalPage(t *testing.T) {
	l := newLoop(t)
	send := `{"to":"finance@acme.example","subject":"Invoice 4471"}`
	s := approvalPageCase{l: l, send: send}
	t.Run("OKOwnerSeesTheCard", s.okOwnerSeesTheCard)
	t.Run("ErrOtherUser", s.errOtherUser)
	t.Run("OKDecidedShowsOutcomeWhoAndWhen", s.okDecidedShowsOutcomeWhoAndWhen)
	t.Run("OKDecidedOnItsPageReturnsThere", s.okDecidedOnItsPageReturnsThere)
	t.Run("OKConsumed", s.okConsumed)
	t.Run("OKExpired", s.okExpired)
	t.Run("OKCancelledTurnStopped", s.okCancelledTurnStopped)
	t.Run("OKCancelledBlockedByAdmin", s.okCancelledBlockedByAdmin)
}

// approvalPageCase is the loop and the call TestApprovalPage's cases show.
type approvalPageCase struct {
	l    *loop
	send string
}

func (s approvalPageCase) okOwnerSeesTheCard(t *testing.T) {
	l, send := s.l, s.send
	id := l.pending(t, l.call("mail", "send_email", send))
	status, doc, _ := page(t, l.Member, id)
	if status != http.StatusOK {
		t.Fatal(status)
	}
	if !doc.has(`id="approval-page"[^>]*data-pending`) || !doc.has(`data-testid="approval-card" data-approval-id="`+id+`"`) {
		t.Fatal("no pending card on the page")
	}
	if got := testid(doc, "arg-value"); !strings.Contains(got, "finance@acme.example") {
		t.Fatalf("argument %q", got)
	}
	if !doc.has(`action="/approvals/`+id+`/decision"`) || !doc.has(`name="decision" value="approve"`) {
		t.Fatal("not decidable on its page")
	}
	if doc.has(`data-testid="outcome"`) {
		t.Fatal("a pending item shows an outcome")
	}
}

func (s approvalPageCase) errOtherUser(t *testing.T) {
	l := s.l
	id := l.pending(t, l.call("mail", "send_email", `{"to":"secret-recipient@acme.example"}`))
	admin := l.NewBrowser()
	admin.SignIn("admin")
	for _, target := range []string{id, "00000000-0000-0000-0000-000000000000", "not-a-uuid"} {
		status, _, body := page(t, admin, target)
		if status != http.StatusNotFound || strings.Contains(body, "secret-recipient") {
			t.Fatalf("%s: %d", target, status)
		}
	}
	if !contains(l.Logs(), "request page refused") || !contains(l.Logs(), id) {
		t.Fatal("attempt not logged")
	}
	if l.status(t, id) != "pending" {
		t.Fatal("looking changed the item")
	}
}

func (s approvalPageCase) okDecidedShowsOutcomeWhoAndWhen(t *testing.T) {
	l, send := s.l, s.send
	id := l.pending(t, l.call("mail", "send_email", send))
	if status, _ := decide(l.Member, id, "reject", "reason", "Wrong recipient"); status != http.StatusSeeOther {
		t.Fatal(status)
	}
	status, doc, _ := page(t, l.Member, id)
	if status != http.StatusOK || doc.has(`id="approval-page"[^>]*data-pending`) || doc.has(`class="decide"`) {
		t.Fatalf("decided page: %d, still decidable", status)
	}
	if got := testid(doc, "outcome-label"); got != "Rejected" {
		t.Fatalf("outcome %q", got)
	}
	who := testid(doc, "outcome-who")
	if !strings.Contains(who, "Decided by "+dev.DemoMember.Name) || !doc.has(`(?s)data-testid="outcome-who">[^/]*<time datetime="20`) {
		t.Fatalf("who and when: %q", who)
	}
	if !strings.Contains(testid(doc, "outcome-reason"), "Wrong recipient") {
		t.Fatal("reason not shown")
	}
	if !strings.Contains(testid(doc, "arguments"), "finance@acme.example") {
		t.Fatal("the call is not shown")
	}
}

func (s approvalPageCase) okDecidedOnItsPageReturnsThere(t *testing.T) {
	l, send := s.l, s.send
	id := l.pending(t, l.call("mail", "send_email", send))
	form := url.Values{"decision": {"approve"}, "csrf_token": {l.Member.CSRF()}}
	req, _ := http.NewRequest(http.MethodPost, l.BaseURL+"/approvals/"+id+"/decision", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", l.BaseURL)
	req.Header.Set("Referer", l.BaseURL+"/approvals/"+id)
	resp, _ := l.Member.Do(req)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/approvals/"+id {
		t.Fatalf("decision from the page: %d → %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, doc, _ := page(t, l.Member, id)
	if got := testid(doc, "outcome-label"); got != "Approved" {
		t.Fatalf("outcome %q", got)
	}
	// From the inbox it still returns to the inbox.
	other := l.pending(t, l.call("mail", "send_email", send))
	if status, _ := decide(l.Member, other, "reject"); status != http.StatusSeeOther {
		t.Fatal(status)
	}
}

func (s approvalPageCase) okConsumed(t *testing.T) {
	l, send := s.l, s.send
	call := l.call("mail", "send_email", send)
	id := l.pending(t, call)
	decide(l.Member, id, "approve")
	if status, out := l.claim(l.Key, id, call); status != http.StatusOK {
		t.Fatalf("claim: %d %v", status, out)
	}
	_, doc, _ := page(t, l.Member, id)
	if got := testid(doc, "outcome-label"); got != "Approved and run" || !strings.Contains(testid(doc, "outcome-text"), "the agent ran this call") {
		t.Fatalf("consumed: %q %q", got, testid(doc, "outcome-text"))
	}
}

func (s approvalPageCase) okExpired(t *testing.T) {
	l, send := s.l, s.send
	due := l.pending(t, l.call("mail", "send_email", send))
	swept := l.pending(t, l.call("mail", "send_email", send))
	ctx := context.Background()
	if _, err := l.DB.Pool.Exec(ctx, `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = ANY($1::uuid[])`, []string{due, swept}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB.ExpireDue(ctx, 1); err != nil { // sweeps one of the two
		t.Fatal(err)
	}
	for _, id := range []string{due, swept} {
		_, doc, _ := page(t, l.Member, id)
		if got := testid(doc, "outcome-label"); got != "Expired" || !strings.Contains(testid(doc, "outcome-text"), "Nobody answered") ||
			doc.has(`class="decide"`) {
			t.Fatalf("expired %s: %q %q", l.status(t, id), got, testid(doc, "outcome-text"))
		}
		if strings.Contains(testid(doc, "outcome-who"), "Decided by") {
			t.Fatal("an expired item names a decider")
		}
	}
}

func (s approvalPageCase) okCancelledTurnStopped(t *testing.T) {
	l, send := s.l, s.send
	call := l.call("mail", "send_email", send)
	call["turn_id"] = "turn-stopped"
	id := l.pending(t, call)
	status, out := l.API(l.Key, http.MethodPost, "/api/v1/turns/cancel", map[string]string{
		"user": dev.DemoMember.Subject, "conversation_id": "conv-1", "turn_id": "turn-stopped"})
	if status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, out)
	}
	_, doc, _ := page(t, l.Member, id)
	if got := testid(doc, "outcome-label"); got != "Cancelled: the turn was stopped" || !strings.Contains(testid(doc, "outcome-text"), "turn was stopped") {
		t.Fatalf("cancelled: %q %q", got, testid(doc, "outcome-text"))
	}
}

func (s approvalPageCase) okCancelledBlockedByAdmin(t *testing.T) {
	l, send := s.l, s.send
	l, admin, tool := blockingLoop(t)
	id := l.pending(t, l.call("mail", "send_email", send))
	block(t, l, admin, tool)
	_, doc, _ := page(t, l.Member, id)
	if got := testid(doc, "outcome-label"); got != "Cancelled: an admin blocked this tool" || !strings.Contains(testid(doc, "outcome-text"), "An admin blocked this tool") {
		t.Fatalf("blocked: %s %q %q", l.status(t, id), got, testid(doc, "outcome-text"))
	}
}

// A signed-out visit to a request's page goes to sign-in and, after a real
// sign-in with the identity provider, back to that page.
func TestApprovalPageAfterSignIn(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("mail", "send_email", `{"to":"finance@acme.example"}`))
	b := l.NewBrowser()
	resp, _ := b.Get("/approvals/" + id)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc.Path != "/signin" || loc.Query().Get("next") != "/approvals/"+id {
		t.Fatalf("signed out: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, body := b.Get(loc.String())
	m := strings.Index(body, `href="/auth/login?next=`)
	if m < 0 {
		t.Fatal("the sign-in page does not carry next on")
	}
	login := body[m+len(`href="`):]
	login = strings.ReplaceAll(login[:strings.Index(login, `"`)], "&amp;", "&")
	resp, _ = b.Get(login)
	authURL, _ := url.Parse(resp.Header.Get("Location"))
	q := authURL.Query()
	q.Set("demo_user", "member")
	authURL.RawQuery = q.Encode()
	resp, _ = b.Get(authURL.String())
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d", resp.StatusCode)
	}
	resp, _ = b.Get(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/approvals/"+id {
		t.Fatalf("callback: %d → %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	status, doc, _ := page(t, b, id)
	if status != http.StatusOK || !doc.has(`data-approval-id="`+id+`"`) {
		t.Fatalf("back on the page: %d", status)
	}
}

// Each inbox card links to its request's page.
func TestInboxCardLinksToItsPage(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("mail", "send_email", `{"to":"a@acme.example"}`))
	_, body := l.Member.Get("/")
	if !doc(body).has(`(?s)data-approval-id="` + id + `"[^>]*>.*?<a class="card-link" href="/approvals/` + id + `" data-testid="card-link">`) {
		t.Fatal("the card does not link to its page")
	}
}
