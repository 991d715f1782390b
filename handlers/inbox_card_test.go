package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The inbox lists pending calls by expiry, the one due first on top, so a
// new call (which expires last) never pushes the others down.
func TestInboxOrderedByExpiry(t *testing.T) {
	l := newLoop(t)
	first := l.pending(t, l.call("mail", "send_email", `{"n":1}`))
	second := l.pending(t, l.call("mail", "send_email", `{"n":2}`))
	_, body := l.Member.Get("/")
	if strings.Index(body, `data-approval-id="`+first+`"`) > strings.Index(body, `data-approval-id="`+second+`"`) {
		t.Fatal("the older call is not on top")
	}
	_, _ = l.DB.Pool.Exec(context.Background(), `UPDATE approvals SET expires_at = now() + interval '1 hour' WHERE id = $1`, first)
	_, body = l.Member.Get("/")
	if strings.Index(body, `data-approval-id="`+second+`"`) > strings.Index(body, `data-approval-id="`+first+`"`) {
		t.Fatal("not ordered by expiry")
	}
	if !strings.Contains(body, `id="pending-new"`) || !strings.Contains(body, `data-testid="show-new"`) {
		t.Fatal("no place for new calls to wait, or no bar")
	}
}

// Times carry their exact value; a call within a minute of expiry is
// marked in words.
func TestCardMarksNearExpiry(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("mail", "send_email", `{"n":1}`))
	card := func() string {
		_, body := l.Member.Get("/")
		m := regexp.MustCompile(`(?s)<li class="card[^"]*" id="approval-` + id + `".*?</li>`).FindString(body)
		if m == "" {
			t.Fatal("no card")
		}
		return m
	}
	if c := card(); strings.Contains(c, `class="card expiring"`) || !strings.Contains(c, `data-testid="expiring-soon" hidden`) {
		t.Fatal("marked as expiring too early")
	}
	_, _ = l.DB.Pool.Exec(context.Background(), `UPDATE approvals SET expires_at = now() + interval '30 seconds' WHERE id = $1`, id)
	c := card()
	if !strings.Contains(c, `class="card expiring"`) || strings.Contains(c, `data-testid="expiring-soon" hidden`) || !strings.Contains(c, "Expires soon") {
		t.Fatal("a call about to expire is not marked")
	}
	if !regexp.MustCompile(`<time datetime="[^"]+" title="[^"]+ UTC" data-rel`).MatchString(c) {
		t.Fatal("times carry no exact value")
	}
}

// The check request's optional conversation_title labels the
// conversation; without it the id is shortened, with the full id on hover.
func TestConversationTitle(t *testing.T) {
	l := newLoop(t)
	long := strings.Repeat("c", 40)
	c := l.call("mail", "send_email", `{"n":1}`)
	c["conversation_id"], c["conversation_title"] = long, "Invoices <for> March"
	titled := l.pending(t, c)
	plain := l.call("mail", "send_email", `{"n":2}`)
	plain["conversation_id"] = long + "-2"
	untitled := l.pending(t, plain)
	_, body := l.Member.Get("/approvals/" + titled)
	if !strings.Contains(body, `title="`+long+`"><bdi class="untrusted">Invoices &lt;for&gt; March</bdi>`) {
		t.Fatal("the title is not shown with the full id on hover")
	}
	_, body = l.Member.Get("/approvals/" + untitled)
	if !strings.Contains(body, `title="`+long+`-2"><bdi class="untrusted">`+long[:24]+`…</bdi>`) {
		t.Fatal("the id is not shortened with the full id on hover")
	}
	bad := l.call("mail", "send_email", `{}`)
	bad["conversation_title"] = strings.Repeat("t", 201)
	if status, out := l.API(l.Key, http.MethodPost, "/api/v1/tool-calls", bad); status != http.StatusBadRequest {
		t.Fatal("an over-long title:", status, out)
	}
}

// A reason typed with an approval is not dropped: it is kept as the
// reviewer's note (never passed to the model), and the audit says so.
func TestReasonWithApprovalKeptAsNote(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("mail", "send_email", `{"n":1}`))
	if s, _ := decide(l.Member, id, "approve", "reason", "only because finance asked"); s != http.StatusSeeOther {
		t.Fatal(s)
	}
	var note, reason string
	var given bool
	ctx := context.Background()
	_ = l.DB.Pool.QueryRow(ctx, `SELECT reviewer_note, reject_reason FROM approvals WHERE id = $1`, id).Scan(&note, &reason)
	if note != "only because finance asked" || reason != "" {
		t.Fatalf("note %q, reason %q", note, reason)
	}
	_ = l.DB.Pool.QueryRow(ctx, `SELECT (detail->>'note_given')::bool FROM audit_events WHERE approval_id = $1 AND action = 'approved'`, id).Scan(&given)
	if !given {
		t.Fatal("the audit does not say a note was kept")
	}
	if _, out := l.API(l.Key, http.MethodGet, "/api/v1/approvals/"+id, nil); strings.Contains(fmt.Sprint(out), "finance") {
		t.Fatal("the note reached the runtime")
	}
	_, body := l.Member.Get("/")
	if !strings.Contains(body, `data-testid="recent-note">Your note: <bdi class="untrusted">only because finance asked`) {
		t.Fatal("the note is not shown with the decision")
	}
}

// Standing decisions say their scope in words; for a tool that sends data
// out or can't be undone they carry what the second confirmation names.
func TestStandingScopeAndConfirmation(t *testing.T) {
	l := newLoop(t)
	send := l.pending(t, l.call("mail", "send_email", `{"to":["a@acme.example","b@acme.example"]}`))
	_, body := l.Member.Get("/approvals/" + send)
	if !strings.Contains(body, `data-confirm-tool="Send email"`) || !strings.Contains(body, "This tool sends data outside.") {
		t.Fatal("no second confirmation for a tool that sends data out")
	}
	if !strings.Contains(body, "This tool, any arguments, in every conversation, without asking") ||
		!strings.Contains(body, "or until the tool’s policy changes") {
		t.Fatal("the scope is not said")
	}
	if !strings.Contains(body, `data-testid="recipients"`) || strings.Count(body, `<li class="mono" data-testid="destination">`) != 2 ||
		strings.Contains(body, `— to <span class="mono" data-testid="destination"><bdi class="untrusted">[`) {
		t.Fatal("recipients are not listed one by one")
	}
	event := l.pending(t, l.call("calendar", "create_event", `{}`))
	if _, body = l.Member.Get("/approvals/" + event); strings.Contains(body, "data-confirm-tool") || !strings.Contains(body, `data-testid="standing"`) {
		t.Fatal("a tool that neither sends out nor destroys asks twice, or offers no standing decision")
	}
}

// A late decision says which call and what happened, and can be dismissed.
func TestLateDecisionSaysWhichCall(t *testing.T) {
	l := newLoop(t)
	c := l.call("mail", "send_email", `{"n":1}`)
	c["conversation_title"] = "Quarter close"
	id := l.pending(t, c)
	decide(l.Member, id, "reject")
	form := "decision=approve&csrf_token=" + l.Member.CSRF()
	req, _ := http.NewRequest(http.MethodPost, l.BaseURL+"/approvals/"+id+"/decision", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", l.BaseURL)
	req.Header.Set("HX-Request", "true")
	resp, body := l.Member.Do(req)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `data-testid="late-which"`) || !strings.Contains(body, "Quarter close") ||
		!strings.Contains(body, "Send email") || !strings.Contains(body, `data-testid="dismiss"`) || !strings.Contains(body, "Rejected") {
		t.Fatalf("late decision: %d\n%s", resp.StatusCode, body)
	}
	// Without script, the page says the same.
	resp, body = l.Member.PostForm("/approvals/"+id+"/decision", map[string][]string{"decision": {"approve"}})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "Your answer to “Send email” (conversation Quarter close") {
		t.Fatalf("late decision without script: %d\n%s", resp.StatusCode, body)
	}
}

// Past the list's limit the inbox says how many calls wait in all and
// which ones it shows (those expiring first); under it, nothing is said.
func TestInboxSaysWhenListStopsShort(t *testing.T) {
	l := newLoop(t)
	last := l.pending(t, l.call("mail", "send_email", `{"n":"last"}`))
	if _, body := l.Member.Get("/"); strings.Contains(body, `data-testid="pending-truncated"`) {
		t.Fatal("a notice while every call is shown")
	}
	// Copies of the item, all expiring before it, fill the list.
	if _, err := l.DB.Pool.Exec(context.Background(), `INSERT INTO approvals (owner_subject, api_key_id, conversation_id, turn_id,
		call_id, tool_id, connector, tool, arguments_digest, arguments_size, preview, agent_reason, available_decisions,
		policy_version, expires_at)
		SELECT owner_subject, api_key_id, conversation_id, turn_id, call_id || '-' || g, tool_id, connector, tool,
			arguments_digest, arguments_size, preview, agent_reason, available_decisions, policy_version,
			now() + interval '1 minute' + g * interval '1 second'
		FROM approvals, generate_series(1, 205) g WHERE id = $1`, last); err != nil {
		t.Fatal(err)
	}
	_, body := l.Member.Get("/")
	if n := strings.Count(body, `data-testid="approval-card"`); n != 200 {
		t.Fatalf("%d cards", n)
	}
	if !strings.Contains(body, "Showing 200 of 206 waiting calls, those expiring first; decide some to see the rest.") {
		t.Fatal("no notice that the list stops short")
	}
	if strings.Contains(body, `data-approval-id="`+last+`"`) {
		t.Fatal("the call expiring last is shown instead of one expiring sooner")
	}
}
