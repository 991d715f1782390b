package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/dev"
)

// The dialog speaks in words, not codes, and a person who presses Enter by
// reflex cancels rather than approves.
func TestPlaybookDialogWordsAndFocus(t *testing.T) {
	l := newLoop(t)
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
	resp, body := l.Member.PostForm("/playbooks/"+dev.DemoPlaybookID+"/enable", url.Values{})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `data-testid="approval-dialog"`) {
		t.Fatalf("dialog: %d", resp.StatusCode)
	}
	if strings.Contains(visibleText(body), "PLAYBOOK_TOOL_APPROVAL_REQUIRED") {
		t.Error("the dialog shows a raw code")
	}
	if text := visibleText(body); strings.Contains(text, "@Untrusted") || !strings.Contains(text, "“Weekly invoice digest” runs unattended") {
		t.Error("the dialog does not name the playbook")
	}
	// What a pre-approval covers, as the standing-approval confirmation
	// says what a grant covers: any arguments, every run, until it lapses.
	for _, want := range []string{"with any arguments, in every run", "without asking anyone", "until it lapses", "revoke it on this page"} {
		if !strings.Contains(visibleText(body), want) {
			t.Errorf("the dialog does not say %q", want)
		}
	}
	dialog := body[strings.Index(body, `data-testid="approval-dialog"`):]
	if i := strings.Index(dialog, "autofocus"); i < 0 || !strings.Contains(dialog[i:i+80], `data-testid="cancel-dialog"`) {
		t.Error("focus does not start on Cancel")
	}
	if strings.Contains(dialog[strings.Index(dialog, `data-testid="approve-tools"`)-120:strings.Index(dialog, `data-testid="approve-tools"`)], "autofocus") {
		t.Error("focus starts on Approve")
	}
}

// The schedule form previews the next three run times without storing
// anything; a bad expression is explained, and nothing changes either.
func TestPlaybookSchedulePreview(t *testing.T) {
	l := newLoop(t)
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
	page := "/playbooks/" + dev.DemoPlaybookID
	stored := func() string {
		var s string
		if err := l.DB.Pool.QueryRow(t.Context(), `SELECT schedule FROM playbooks WHERE id = $1`, dev.DemoPlaybookID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("OK", func(t *testing.T) {
		resp, body := l.Member.PostForm(page+"/schedule", url.Values{"schedule": {"0 9 * * 1-5"}, "preview": {"1"}})
		if resp.StatusCode != http.StatusOK {
			t.Fatal(resp.StatusCode)
		}
		preview := body[strings.Index(body, `id="schedule-preview"`):]
		preview = preview[:strings.Index(preview, "</div>")]
		if n := strings.Count(preview, "<time "); n != 3 || !strings.Contains(preview, "09:00 UTC") {
			t.Fatalf("next runs: %d in %s", n, preview)
		}
		if s := stored(); s != "" {
			t.Fatalf("a preview stored the schedule %q", s)
		}
	})
	t.Run("ErrNotCron", func(t *testing.T) {
		resp, body := l.Member.PostForm(page+"/schedule", url.Values{"schedule": {"every day"}, "preview": {"1"}})
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(visibleText(body), "That schedule is not a cron expression") {
			t.Fatalf("bad expression: %d", resp.StatusCode)
		}
		if strings.Contains(body, "<time ") || stored() != "" {
			t.Fatal("a bad expression has run times or was stored")
		}
	})
	t.Run("SavedScheduleShowsNextRuns", func(t *testing.T) {
		l.approvePlaybook(t)
		if resp, _ := l.Member.PostForm(page+"/schedule", url.Values{"schedule": {"0 6 * * *"}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatal(resp.StatusCode)
		}
		if _, body := l.Member.Get(page); strings.Count(body, "<time ") != 3 || !strings.Contains(body, "06:00 UTC") {
			t.Fatal("the saved schedule's next runs are not shown")
		}
	})
}

// A run's page lists every call it made: allowed by pre-approval, allowed
// by policy, and refused, in order.
func TestPlaybookRunShowsEveryCall(t *testing.T) {
	l := newLoop(t)
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
	l.approveAndEnable(t)
	status, out := l.startRun(t)
	if status != http.StatusOK {
		t.Fatal(status, out)
	}
	inRun := func(connector, tool, args string) {
		c := l.call(connector, tool, args)
		c["playbook_run_id"] = out["run_id"]
		l.check(t, c)
	}
	inRun("mail", "send_email", `{"to":"f@x"}`)
	inRun("mail", "search_messages", `{}`)
	inRun("files", "delete_file", `{"p":1}`)
	_, body := l.Member.Get("/playbooks/" + dev.DemoPlaybookID)
	text := visibleText(body)
	for _, want := range []string{"Allowed Mail · Send email — allowed by pre-approval", "Allowed Mail · Search messages — allowed by policy",
		"Refused Files · Delete file"} {
		if !strings.Contains(text, want) {
			t.Errorf("the run does not show %q", want)
		}
	}
	if a, b, c := strings.Index(text, "Send email — allowed"), strings.Index(text, "Search messages — allowed"), strings.Index(text, "Refused Files"); !(a < b && b < c) {
		t.Error("the run's calls are not in order")
	}
	// The policy's allow is not an audit event; the pre-approval's is, once.
	if n := l.countPlaybookRows(t, `SELECT count(*) FROM audit_events WHERE action = 'allowed by pre-approval'`); n != 1 {
		t.Fatalf("allowed by pre-approval lines: %d", n)
	}
}
