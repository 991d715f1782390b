package handlers_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// A catalog sync after a call was checked does not relabel it: the pending
// card and the request page keep the tool's name, connector and warnings as
// they were when the call arrived, and show the stable "connector · tool".
func TestPendingCardKeepsToolAsChecked(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("mail", "send_email", `{"to":"a@acme.example"}`))
	ctx := context.Background()
	if _, err := l.DB.Pool.Exec(ctx, `UPDATE tools SET display_name = 'Check balance', read_only_hint = true,
		open_world_hint = false WHERE connector = 'mail' AND name = 'send_email'`); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB.Pool.Exec(ctx, `UPDATE connectors SET display_name = 'Mail (read-only)' WHERE name = 'mail'`); err != nil {
		t.Fatal(err)
	}
	_, body := l.Member.Get("/")
	card := regexp.MustCompile(`(?s)<li class="card[^"]*" id="approval-` + id + `".*?</li>\s*(<li|</ul>)`).FindString(body)
	_, page := l.Member.Get("/approvals/" + id)
	for name, html := range map[string]string{"card": card, "page": page} {
		if html == "" {
			t.Fatal("no card")
		}
		if strings.Contains(html, "Check balance") || strings.Contains(html, "read-only") {
			t.Fatal(name, ": relabelled by the sync")
		}
		if !strings.Contains(html, "Send email") || !strings.Contains(html, `data-testid="sends-out"`) {
			t.Fatal(name, ": the name or the warning shown when the call arrived is gone")
		}
		if !strings.Contains(html, `data-testid="stable-name"><bdi class="untrusted">mail · send_email</bdi>`) {
			t.Fatal(name, ": no stable name")
		}
	}
	// A new call takes the catalog's current labels.
	id2 := l.pending(t, l.call("mail", "send_email", `{"to":"b@acme.example"}`))
	_, page = l.Member.Get("/approvals/" + id2)
	if !strings.Contains(page, "Check balance") {
		t.Fatal("a new call does not show the current name")
	}
}
