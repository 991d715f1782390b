package handlers_test

import (
	"fmt"
	"strings"
	"testing"
)

// longDeletion is a shell line of about 5,000 characters whose last
// simple command (the 54th) deletes.
func longDeletion() string {
	var b strings.Builder
	for i := 0; i < 53; i++ {
		fmt.Fprintf(&b, "echo %02d%s; ", i, strings.Repeat("x", 85))
	}
	b.WriteString("rm -rf ~/projects/shop/.git /var/backups/db")
	return b.String()
}

// TestFlagsFirst: on the card and the request page the call's own red
// flags, then its first and last simple commands, come before "The agent
// says" and the tool-wide notices (issue 42); a parse kept in part says
// how many commands it keeps of the true count, where it starts, and
// keeps the last command.
func TestFlagsFirst(t *testing.T) {
	l := newLoop(t)
	cmd := longDeletion()
	if n := len(cmd); n < 4950 || n > 5100 {
		t.Fatalf("the command has %d characters", n)
	}
	call := l.call("system", "run_command", `{"command":`+jsonText(cmd)+`}`)
	call["reason"] = "Tidy up the release checkout"
	id := l.pending(t, call)
	for _, path := range []string{"/", "/approvals/" + id} {
		_, body := l.Member.Get(path)
		start := strings.Index(body, `data-approval-id="`+id+`"`)
		if start < 0 {
			t.Fatalf("%s: no card", path)
		}
		card := body[start:]
		at := func(testid string) int {
			i := strings.Index(card, `data-testid="`+testid+`"`)
			if i < 0 {
				t.Fatalf("%s: no %s", path, testid)
			}
			return i
		}
		flags, last := at("call-flags"), at("last-command")
		for _, later := range []string{"agent-reason", "destructive-warning", "shell-commands", "arguments"} {
			if i := strings.Index(card, `data-testid="`+later+`"`); i >= 0 && (i < flags || i < last) {
				t.Errorf("%s: %s comes before the flags or the last command", path, later)
			}
		}
		if !strings.Contains(card[flags:flags+2000], `data-kind="delete"`) {
			t.Errorf("%s: the deletion is not flagged first", path)
		}
		if got := card[last : last+300]; !strings.Contains(got, "rm -rf ~/projects/shop/.git /var/backups/db") {
			t.Errorf("%s: the last command is %q", path, got)
		}
		c := card[at("shell-count"):]
		c = c[:strings.Index(c, "</p>")]
		if !strings.Contains(c, " of 54 commands, as written") || !strings.Contains(c, "First ") || !strings.Contains(c, "show all") {
			t.Errorf("%s: the count says %q", path, c)
		}
	}
}
