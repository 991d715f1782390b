package handlers_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestHiddenCharactersOnDestinationAndDecidedPage: the card's destination
// line ("Sends data outside … — to X") and a decided item's own page ("The
// agent said:") show hidden characters as markers, never as they are.
func TestHiddenCharactersOnDestinationAndDecidedPage(t *testing.T) {
	l := newLoop(t)
	call := l.call("mail", "send_email", `{"to":"fin\u202Eance@acme.example","subject":"Invoice"}`)
	call["reason"] = "Pay\u200b the invoice"
	id := l.pending(t, call)
	raw := []string{"\u202E", "\u200b"}
	noRaw := func(t *testing.T, page, body string) {
		t.Helper()
		for _, r := range raw {
			if strings.Contains(body, r) {
				t.Errorf("%s shows U+%04X as it is", page, []rune(r)[0])
			}
		}
	}
	_, inbox := l.Member.Get("/")
	noRaw(t, "inbox", inbox)
	line := section(inbox, `data-testid="sends-out"`, "</div>")
	if !strings.Contains(line, `data-testid="destination"`) || !strings.Contains(line, "fin<span class=\"hidden-char\"") || !strings.Contains(line, "⟨U+202E⟩") {
		t.Errorf("the destination line does not show the marked recipient: %s", line)
	}
	if s, _ := decide(l.Member, id, "reject", "reason", "Not this one"); s != http.StatusSeeOther {
		t.Fatal("reject:", s)
	}
	resp, page := l.Member.Get("/approvals/" + id)
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.StatusCode)
	}
	noRaw(t, "the decided item's page", page)
	said := section(page, "The agent said:", "</p>")
	if !strings.Contains(said, "Pay<span class=\"hidden-char\"") || !strings.Contains(said, "⟨U+200B⟩") {
		t.Errorf("\"The agent said:\" does not show the marked reason: %s", said)
	}
}

// section is the text of body from the first start up to the next end.
func section(body, start, end string) string {
	i := strings.Index(body, start)
	if i < 0 {
		return ""
	}
	rest := body[i:]
	if j := strings.Index(rest, end); j >= 0 {
		return rest[:j]
	}
	return rest
}
