package handlers_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

// decisionReply is what one decision post got back.
type decisionReply struct {
	Decision string
	HTMX     bool
	Status   int
	Body     string
	Err      error
}

// postDecision posts a decision without testing.T, so that it may run in
// any goroutine: the CSRF token is read beforehand.
func postDecision(b *testenv.Browser, csrf, id, decision string, htmx bool) decisionReply {
	form := url.Values{"decision": {decision}, "csrf_token": {csrf}}
	req, err := http.NewRequest(http.MethodPost, b.Env.BaseURL+"/approvals/"+id+"/decision", strings.NewReader(form.Encode()))
	if err != nil {
		return decisionReply{Err: err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.Env.BaseURL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if htmx {
		req.Header.Set("HX-Request", "true")
	}
	resp, err := b.Client.Do(req)
	if err != nil {
		return decisionReply{Decision: decision, HTMX: htmx, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return decisionReply{Decision: decision, HTMX: htmx, Status: resp.StatusCode, Body: string(body), Err: err}
}

// decideConcurrently sends n decisions on id at once, alternating approve
// and reject (or only decisions[0] when one is given) and htmx or not.
func decideConcurrently(l *loop, id string, n int, decisions ...string) []decisionReply {
	if len(decisions) == 0 {
		decisions = []string{"approve", "reject"}
	}
	csrf := l.Member.CSRF()
	replies := make([]decisionReply, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range replies {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			replies[i] = postDecision(l.Member, csrf, id, decisions[i%len(decisions)], i%4 >= 2)
		}(i)
	}
	close(start)
	wg.Wait()
	return replies
}

var (
	lateCardRE  = regexp.MustCompile(`(?s)<li[^>]*data-testid="late-decision"[^>]*>.*?</li>`)
	lateCodeRE  = regexp.MustCompile(`data-code="([^"]*)"`)
	errorPageRE = regexp.MustCompile(`(?s)<div[^>]*data-testid="error-page"[^>]*>.*?<a `)
	tagRE       = regexp.MustCompile(`<[^>]*>`)
)

// textOf is what a person reads in an HTML fragment.
func textOf(fragment string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tagRE.ReplaceAllString(fragment, " "))), " ")
}

// lateText is the text a loser was shown: the late-decision card for htmx,
// the error page's panel otherwise; and the card's code.
func lateText(t *testing.T, r decisionReply) (text, code string) {
	t.Helper()
	if r.HTMX {
		card := lateCardRE.FindString(r.Body)
		if card == "" {
			t.Errorf("htmx loser got no late-decision card: %s", r.Body)
			return textOf(r.Body), ""
		}
		if m := lateCodeRE.FindStringSubmatch(card); m != nil {
			code = m[1]
		}
		return textOf(card), code
	}
	panel := errorPageRE.FindString(r.Body)
	if panel == "" {
		t.Errorf("loser got no error page: %s", r.Body)
		return textOf(r.Body), ""
	}
	return textOf(panel), ""
}

// winningWords is how a loser must name the outcome that won.
var winningWords = map[string]string{"approved": "approved once", "rejected": "rejected"}

// assertOneWinnerTheRestTold checks that exactly one reply won and that
// every other one says, in words and code, what won.
func assertOneWinnerTheRestTold(t *testing.T, l *loop, id string, replies []decisionReply) {
	t.Helper()
	final := l.status(t, id)
	words, ok := winningWords[final]
	if !ok {
		t.Fatalf("final status %q", final)
	}
	winners := 0
	for i, r := range replies {
		if r.Err != nil {
			t.Fatalf("reply %d: %v", i, r.Err)
		}
		if r.Status == http.StatusSeeOther || (r.HTMX && r.Status == http.StatusOK) {
			winners++
			if want := map[string]string{"approve": "approved", "reject": "rejected"}[r.Decision]; want != final {
				t.Errorf("reply %d won with %s but the item is %s", i, r.Decision, final)
			}
			continue
		}
		if r.Status != http.StatusConflict {
			t.Errorf("reply %d: status %d, want 409", i, r.Status)
			continue
		}
		text, code := lateText(t, r)
		lower := strings.ToLower(text)
		if !strings.Contains(lower, "already answered") || !strings.Contains(lower, words) {
			t.Errorf("reply %d (%s, htmx=%v) does not name the winning outcome %q: %s", i, r.Decision, r.HTMX, words, text)
		}
		if strings.Contains(lower, "expired") {
			t.Errorf("reply %d (%s, htmx=%v) says expired although a decision won: %s", i, r.Decision, r.HTMX, text)
		}
		if r.HTMX && code != "already_answered" {
			t.Errorf("reply %d: code %q, want already_answered", i, code)
		}
	}
	if winners != 1 {
		t.Fatalf("%d winners", winners)
	}
	var lines int
	_ = l.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action IN ('approved','rejected')`, id).Scan(&lines)
	if lines != 1 {
		t.Fatalf("decision audit lines %d", lines)
	}
}

func TestConcurrentDecisionsTellLosersTheTruth(t *testing.T) {
	l := newLoop(t)
	// Several rounds: the race that told losers "expired" did not show on
	// every run.
	for round := range 5 {
		t.Run(fmt.Sprintf("Round%d", round), func(t *testing.T) {
			id := l.pending(t, l.call("mail", "send_email", fmt.Sprintf(`{"to":"race-%d@acme.example"}`, round)))
			assertOneWinnerTheRestTold(t, l, id, decideConcurrently(l, id, 20))
		})
	}
}
