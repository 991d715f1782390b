package handlers_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/dev"
)

// Every signed-in page's tab title starts with the count of waiting calls,
// and its favicon has a badge while any wait.
func TestTitleCarriesCount(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	if _, body := l.Member.Get("/auto-approve"); !contains(body, "<title>Auto-approve · Countersign</title>") || !contains(body, `href="/static/favicon.svg" type="image/svg+xml" data-favicon`) {
		t.Fatal("nothing waits, yet the title or icon says otherwise")
	}
	first := l.pending(t, l.call("mail", "send_email", `{"to":"a@acme.example"}`))
	l.pending(t, l.call("mail", "send_email", `{"to":"b@acme.example"}`))
	for path, title := range map[string]string{"/": "(2) Inbox", "/auto-approve": "(2) Auto-approve", "/playbooks": "(2) Playbooks", "/approvals/" + first: "(2) Request"} {
		resp, body := l.Member.Get(path)
		if resp.StatusCode != http.StatusOK || !contains(body, "<title>"+title+" · Countersign</title>") {
			t.Fatalf("%s: %d, want title %q", path, resp.StatusCode, title)
		}
		if !contains(body, `href="/static/favicon-pending.svg"`) || !contains(body, `data-pending="2"`) {
			t.Fatalf("%s: no badge", path)
		}
	}
	// Someone else's waiting calls are not counted.
	if _, body := admin.Get("/admin/audit"); !contains(body, "<title>Audit · Countersign</title>") {
		t.Fatal("the admin's title counts the member's calls")
	}
	decide(l.Member, first, "reject")
	if _, body := l.Member.Get("/auto-approve"); !contains(body, "<title>(1) Auto-approve · Countersign</title>") {
		t.Fatal("a decided call is still counted")
	}
}

type countEvent struct {
	Count int      `json:"count"`
	IDs   []string `json:"ids"`
}

func decodeCount(t *testing.T, ev [2]string) countEvent {
	t.Helper()
	if ev[0] != "count" {
		t.Fatalf("want a count event, got %q: %s", ev[0], ev[1])
	}
	var c countEvent
	if err := json.Unmarshal([]byte(ev[1]), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// A page other than the inbox listens to a count-only stream: counts and
// arrivals, never a rendered card, never an argument value.
func TestCountStream(t *testing.T) {
	l := newLoop(t)
	next := openStream(t, l, "/events?only=count")
	if c := decodeCount(t, next()); c.Count != 0 || len(c.IDs) != 0 {
		t.Fatalf("start: %+v", c)
	}
	id := l.pending(t, l.call("mail", "send_email", `{"to":"secret-recipient@acme.example"}`))
	ev := next()
	var arrived map[string]string
	if ev[0] != "arrived" || json.Unmarshal([]byte(ev[1]), &arrived) != nil {
		t.Fatalf("arrival: %q %s", ev[0], ev[1])
	}
	if arrived["id"] != id || arrived["tool"] != "Send email" || arrived["connector"] != "Mail" || arrived["url"] != "/approvals/"+id {
		t.Fatalf("arrival %v", arrived)
	}
	if strings.Contains(ev[1], "secret-recipient") {
		t.Fatal("an argument value left in the arrival")
	}
	if c := decodeCount(t, next()); c.Count != 1 || len(c.IDs) != 1 || c.IDs[0] != id {
		t.Fatalf("after the call: %+v", c)
	}
	// Another person's call changes nothing here; the decision does.
	other := l.call("mail", "send_email", `{"to":"z"}`)
	other["user"] = dev.DemoAdmin.Subject
	l.pending(t, other)
	decide(l.Member, id, "approve")
	if c := decodeCount(t, next()); c.Count != 0 || len(c.IDs) != 0 {
		t.Fatalf("after the decision: %+v", c)
	}
}

// The inbox's stream carries the counts besides its cards when asked to;
// without asking it is as it was.
func TestInboxStreamWithCount(t *testing.T) {
	l := newLoop(t)
	next := openStream(t, l, "/events?with=count")
	if ev := next(); ev[0] != "sync" {
		t.Fatal("first event", ev[0])
	}
	if c := decodeCount(t, next()); c.Count != 0 {
		t.Fatalf("start: %+v", c)
	}
	id := l.pending(t, l.call("mail", "send_email", `{"to":"a"}`))
	if ev := next(); ev[0] != "arrived" || !strings.Contains(ev[1], id) {
		t.Fatal("arrival", ev)
	}
	if ev := next(); ev[0] != "new" || !strings.Contains(ev[1], id) {
		t.Fatal("card", ev[0])
	}
	if c := decodeCount(t, next()); c.Count != 1 {
		t.Fatalf("count %+v", c)
	}
	_, page := l.Member.Get("/")
	if !contains(page, `sse-connect="/events?have=`) || !contains(page, `&amp;with=count"`) {
		t.Fatal("the inbox does not ask for counts")
	}
}

// The arrival event carries the names with hidden characters as markers:
// a desktop notification is plain text, and a bidi control would reorder it.
func TestArrivedMarksHiddenCharacters(t *testing.T) {
	l := newLoop(t)
	if _, err := l.DB.Pool.Exec(t.Context(), `UPDATE tools SET display_name = 'Send '||chr(8238)||'liame'||chr(8203)
		WHERE connector = 'mail' AND name = 'send_email'`); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB.Pool.Exec(t.Context(), `UPDATE connectors SET display_name = 'Ma'||chr(8207)||'il' WHERE name = 'mail'`); err != nil {
		t.Fatal(err)
	}
	next := openStream(t, l, "/events?only=count")
	decodeCount(t, next())
	l.pending(t, l.call("mail", "send_email", `{"to":"a@acme.example"}`))
	ev := next()
	var arrived map[string]string
	if ev[0] != "arrived" || json.Unmarshal([]byte(ev[1]), &arrived) != nil {
		t.Fatalf("arrival: %q %s", ev[0], ev[1])
	}
	if arrived["tool"] != "Send ⟨U+202E⟩liame⟨U+200B⟩" || arrived["connector"] != "Ma⟨U+200F⟩il" {
		t.Fatalf("arrival %q %q", arrived["tool"], arrived["connector"])
	}
}
