package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A batch gives no standing answer: decision=always (or conversation) is
// 422, the call stays waiting and no grant is made.
func TestBatchRefusesStandingAnswers(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("mail", "send_email", `{"to":"batch-always@example.org"}`))
	for _, d := range []string{"always", "conversation", "always_matching", ""} {
		resp, _ := l.Member.PostForm("/approvals/batch", url.Values{"decision": {d}, "id": {id}})
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("decision=%q: %d, want 422", d, resp.StatusCode)
		}
	}
	if st := l.status(t, id); st != "pending" {
		t.Fatalf("the call became %s", st)
	}
	if n := l.countPlaybookRows(t, `SELECT count(*) FROM standing_grants`); n != 0 {
		t.Fatalf("%d standing grants after refused batches", n)
	}
}

// A batch names items by the ids the server issued: the upper-case
// spelling of a waiting item's id is not found, and the item stays
// waiting.
func TestBatchUpperCaseIDNotFound(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("mail", "send_email", `{"to":"batch-upper@example.org"}`))
	spellings := []string{strings.ToUpper(id)}
	if first := strings.ToUpper(id[:8]); first != id[:8] { // the first group has a letter
		spellings = append(spellings, first+id[8:])
	}
	for _, s := range spellings {
		resp, body := l.Member.PostForm("/approvals/batch", url.Values{"decision": {"approve"}, "id": {s}})
		if resp.StatusCode != http.StatusOK || !strings.Contains(visibleText(body), "Not decided — not found") {
			t.Fatalf("%q: %d %s", s, resp.StatusCode, visibleText(body))
		}
		if st := l.status(t, id); st != "pending" {
			t.Fatalf("%q decided the item: %s", s, st)
		}
	}
}
