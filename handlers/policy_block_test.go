package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/internal/testenv"
)

// blockingLoop is a loop with a signed-in admin and the id of mail ·
// send_email, the tool the admin blocks.
func blockingLoop(t *testing.T) (*loop, *testenv.Browser, string) {
	t.Helper()
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	return l, admin, toolID(t, l.Env, "mail", "send_email")
}

// block sets the tool's mode to block through the admin's policy screen.
func block(t *testing.T, l *loop, admin *testenv.Browser, id string) {
	t.Helper()
	if s, body := savePolicy(t, admin, l.Env, id, url.Values{"mode": {"block"}}); s != http.StatusSeeOther {
		t.Fatalf("block: %d\n%s", s, body)
	}
}

// claim presents the call id and digest of call for approval id.
func (l *loop) claim(key, id string, call map[string]any) (int, map[string]any) {
	return l.API(key, http.MethodPost, "/api/v1/approvals/"+id+"/claim", map[string]any{
		"call_id": call["call_id"], "arguments_digest": approval.Digest(call["arguments"].(string))})
}

func (l *loop) endCode(t *testing.T, id string) (string, string) {
	t.Helper()
	status, out := l.API(l.Key, http.MethodGet, "/api/v1/approvals/"+id, nil)
	if status != http.StatusOK {
		t.Fatalf("get %s: %d %v", id, status, out)
	}
	s, _ := out["status"].(string)
	c, _ := out["code"].(string)
	return s, c
}

func TestBlockEndsApprovedUnclaimed(t *testing.T) {
	l, admin, id := blockingLoop(t)
	call := l.call("mail", "send_email", `{"to":"finance@acme.example"}`)
	aid := l.pending(t, call)
	if s, _ := decide(l.Member, aid, "approve"); s != http.StatusSeeOther {
		t.Fatal("approve:", s)
	}
	block(t, l, admin, id)
	status, out := l.claim(l.Key, aid, call)
	if status != http.StatusConflict || errCode(out) != "blocked_by_policy" {
		t.Fatalf("claim after block: %d %v", status, out)
	}
	if s, c := l.endCode(t, aid); s != "cancelled" || c != "blocked_by_policy" {
		t.Fatalf("item after block: %s %s", s, c)
	}
	if n := l.auditCount(t, aid, "claimed"); n != 0 {
		t.Fatalf("claimed audit lines %d", n)
	}
}

// The claim itself re-reads the tool's policy: an approved item of a tool
// that is blocked now is refused even if nothing ended it at block time.
func TestClaimRereadsPolicy(t *testing.T) {
	l, _, id := blockingLoop(t)
	call := l.call("mail", "send_email", `{"to":"a@acme.example"}`)
	aid := l.pending(t, call)
	if s, _ := decide(l.Member, aid, "approve"); s != http.StatusSeeOther {
		t.Fatal("approve:", s)
	}
	if _, err := l.DB.Pool.Exec(context.Background(), `UPDATE tools SET mode = 'block' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	status, out := l.claim(l.Key, aid, call)
	if status != http.StatusConflict || errCode(out) != "blocked_by_policy" {
		t.Fatalf("claim of a blocked tool: %d %v", status, out)
	}
	if got := l.status(t, aid); got != "approved" {
		t.Fatalf("refused claim changed the item: %s", got)
	}
}

type waitResult struct {
	status int
	body   map[string]any
	err    error
}

// longPoll waits on the item as a runtime does, in the background.
func longPoll(l *loop, id string) chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, l.BaseURL+"/api/v1/approvals/"+id+"?wait=30s", nil)
		req.Header.Set("Authorization", "Bearer "+l.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- waitResult{err: err}
			return
		}
		defer resp.Body.Close()
		var out map[string]any
		err = json.NewDecoder(resp.Body).Decode(&out)
		ch <- waitResult{status: resp.StatusCode, body: out, err: err}
	}()
	return ch
}

func TestBlockCancelsPending(t *testing.T) {
	l, admin, id := blockingLoop(t)
	call := l.call("mail", "send_email", `{"to":"waiting@acme.example"}`)
	aid := l.pending(t, call)
	next := openStream(t, l, "/events")
	if ev := next(); ev[0] != "sync" || !strings.Contains(ev[1], aid) {
		t.Fatal("first event", ev[0])
	}
	before := l.Hub.Subscribers()
	waiter := longPoll(l, aid)
	waitFor(t, func() bool { return l.Hub.Subscribers() == before+1 })

	block(t, l, admin, id)

	select {
	case r := <-waiter:
		if r.err != nil || r.status != http.StatusOK || r.body["status"] != "cancelled" || r.body["code"] != "blocked_by_policy" ||
			!strings.Contains(r.body["message"].(string), "blocked") {
			t.Fatalf("waiter woke with %v %d %v", r.err, r.status, r.body)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter was not woken by the block")
	}
	if ev := next(); ev[0] != "gone" || !strings.Contains(ev[1], "approval-"+aid) {
		t.Fatal("inbox card not removed:", ev)
	}
	if s, _ := decide(l.Member, aid, "approve"); s != http.StatusConflict {
		t.Fatal("decision on a blocked item:", s)
	}
	if got := l.status(t, aid); got != "cancelled" {
		t.Fatal(got)
	}
	if status, out := l.claim(l.Key, aid, call); status != http.StatusConflict || errCode(out) != "blocked_by_policy" {
		t.Fatalf("claim: %d %v", status, out)
	}
	var n int
	var actor, code string
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT count(*), max(actor_kind || ':' || actor_name), max(detail->>'code')
		FROM audit_events WHERE approval_id = $1 AND action = 'cancelled'`, aid).Scan(&n, &actor, &code); err != nil {
		t.Fatal(err)
	}
	if n != 1 || !strings.HasPrefix(actor, "user:") || code != "blocked_by_policy" {
		t.Fatalf("cancel audit lines %d, actor %q, code %q", n, actor, code)
	}
	if n := l.auditCount(t, aid, ""); n != 2 { // requested, cancelled
		t.Fatalf("audit lines for the item %d", n)
	}
}

func TestBlockDeniesResentPendingCall(t *testing.T) {
	t.Run("ThroughPolicyScreen", func(t *testing.T) {
		l, admin, id := blockingLoop(t)
		call := l.call("mail", "send_email", `{"to":"again@acme.example"}`)
		l.pending(t, call)
		block(t, l, admin, id)
		if out := l.check(t, call); out["decision"] != "deny" || out["code"] != "blocked_by_policy" {
			t.Fatal("re-sent call after block:", out)
		}
	})
	// Even with the item still pending, the block is evaluated before the
	// lookup of the same call.
	t.Run("BlockBeforePendingLookup", func(t *testing.T) {
		l, _, id := blockingLoop(t)
		call := l.call("mail", "send_email", `{"to":"again@acme.example"}`)
		l.pending(t, call)
		if _, err := l.DB.Pool.Exec(context.Background(), `UPDATE tools SET mode = 'block' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		if out := l.check(t, call); out["decision"] != "deny" || out["code"] != "blocked_by_policy" {
			t.Fatal("re-sent call to a blocked tool:", out)
		}
	})
}

func TestCancelTurnEndsApprovedUnclaimed(t *testing.T) {
	l := newLoop(t)
	call := l.call("mail", "send_email", `{"to":"turn@acme.example"}`)
	call["turn_id"] = "turn-stopped"
	aid := l.pending(t, call)
	if s, _ := decide(l.Member, aid, "approve"); s != http.StatusSeeOther {
		t.Fatal("approve:", s)
	}
	n, err := l.Client.CancelTurn(context.Background(), call["user"].(string), "conv-1", "turn-stopped")
	if err != nil || n != 1 {
		t.Fatalf("cancel: %d %v", n, err)
	}
	if status, out := l.claim(l.Key, aid, call); status != http.StatusConflict {
		t.Fatalf("claim after turn cancel: %d %v", status, out)
	}
	if s, c := l.endCode(t, aid); s != "cancelled" || c != "approval_cancelled" {
		t.Fatalf("item after turn cancel: %s %s", s, c)
	}
	if n := l.auditCount(t, aid, "cancelled"); n != 1 {
		t.Fatalf("cancel audit lines %d", n)
	}
}

func TestPendingCallsMatchedPerKey(t *testing.T) {
	l := newLoop(t)
	other := l.APIKey()
	call := l.call("mail", "send_email", `{"to":"shared@acme.example"}`)
	mine := l.pending(t, call)
	status, out := l.API(other, http.MethodPost, "/api/v1/tool-calls", call)
	if status != http.StatusOK || out["decision"] != "pending" {
		t.Fatalf("other key: %d %v", status, out)
	}
	theirs := out["approval"].(map[string]any)["id"].(string)
	if theirs == mine {
		t.Fatal("another key was given this key's approval id")
	}
	// Each key still finds its own item again.
	if l.pending(t, call) != mine {
		t.Fatal("the first key lost its item")
	}
	if _, again := l.API(other, http.MethodPost, "/api/v1/tool-calls", call); again["approval"].(map[string]any)["id"] != theirs {
		t.Fatal("the other key lost its item")
	}
}

func TestBlockImpactPreview(t *testing.T) {
	l, admin, id := blockingLoop(t)
	var waiting []string
	for _, to := range []string{"a", "b", "c"} {
		waiting = append(waiting, l.pending(t, l.call("mail", "send_email", `{"to":"`+to+`"}`)))
	}
	approved := l.pending(t, l.call("mail", "send_email", `{"to":"d"}`))
	if s, _ := decide(l.Member, approved, "approve"); s != http.StatusSeeOther {
		t.Fatal("approve:", s)
	}
	consumedCall := l.call("mail", "send_email", `{"to":"e"}`)
	consumed := l.pending(t, consumedCall)
	if s, _ := decide(l.Member, consumed, "approve"); s != http.StatusSeeOther {
		t.Fatal("approve:", s)
	}
	if s, out := l.claim(l.Key, consumed, consumedCall); s != http.StatusOK {
		t.Fatal("claim:", s, out)
	}

	// A change that does not block leaves calls in flight alone and says nothing of them.
	form := url.Values{"mode": {"require_approval"}, "condition": {"size(args) > 5"}, "standing_approval": {"1"},
		"action": {"save"}, "version": {toolVersion(t, l.Env, id)}}
	resp, body := admin.PostForm("/admin/policies/"+id, form)
	if resp.StatusCode != http.StatusSeeOther || strings.Contains(body, "waiting call") {
		t.Fatalf("non-blocking change: %d\n%s", resp.StatusCode, body)
	}

	form = url.Values{"mode": {"block"}, "action": {"save"}, "version": {toolVersion(t, l.Env, id)}}
	resp, body = admin.PostForm("/admin/policies/"+id, form)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-testid="impact"`) ||
		!strings.Contains(body, "3 waiting calls will be cancelled, 1 approved call will not run") {
		t.Fatalf("impact: %d\n%s", resp.StatusCode, body)
	}
	if got := l.status(t, waiting[0]); got != "pending" {
		t.Fatal("the preview saved the change:", got)
	}
	form.Set("action", "confirm")
	if resp, _ := admin.PostForm("/admin/policies/"+id, form); resp.StatusCode != http.StatusSeeOther {
		t.Fatal("confirm:", resp.StatusCode)
	}
	for _, aid := range append(waiting, approved) {
		if s, c := l.endCode(t, aid); s != "cancelled" || c != "blocked_by_policy" {
			t.Fatalf("%s after block: %s %s", aid, s, c)
		}
	}
	if got := l.status(t, consumed); got != "consumed" {
		t.Fatal("a consumed item changed:", got)
	}
	var stopped int
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT (detail->>'calls_stopped')::int FROM audit_events
		WHERE action = 'policy changed' AND detail->'after'->>'mode' = 'block'`).Scan(&stopped); err != nil || stopped != 4 {
		t.Fatalf("policy changed line: calls_stopped %d, %v", stopped, err)
	}
}
