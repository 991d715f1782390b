package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/web"
	"github.com/jackc/pgx/v5"
)

func TestCheck(t *testing.T) {
	l := newLoop(t)
	t.Run("AllowedByPolicy", func(t *testing.T) {
		out := l.check(t, l.call("mail", "search_messages", `{"query":"x"}`))
		if out["decision"] != "allow" || out["via"] != "policy" {
			t.Fatal(out)
		}
	})
	t.Run("PendingShape", func(t *testing.T) {
		out := l.check(t, l.call("mail", "send_email", `{"to":"a@b.c"}`))
		a := out["approval"].(map[string]any)
		if a["status"] != "pending" || a["arguments_digest"] != approval.Digest(`{"to":"a@b.c"}`) || a["expires_at"] == nil {
			t.Fatal(out)
		}
		if d := a["available_decisions"].([]any); len(d) != 5 || d[3] != "always_matching" {
			t.Fatal(d)
		}
		// The time left, by the database's clock, for runtimes whose own
		// clock may differ: just under the 600 s cap.
		if ms, ok := a["expires_in_ms"].(float64); !ok || ms <= 590_000 || ms > 600_000 {
			t.Fatalf("expires_in_ms %v", a["expires_in_ms"])
		}
		status, got := l.API(l.Key, http.MethodGet, "/api/v1/approvals/"+a["id"].(string), nil)
		if ms, ok := got["expires_in_ms"].(float64); status != http.StatusOK || !ok || ms <= 0 || ms > 600_000 {
			t.Fatalf("GET approval: %d expires_in_ms %v", status, got["expires_in_ms"])
		}
	})
	t.Run("SameCallSameItem", func(t *testing.T) {
		c := l.call("mail", "send_email", `{"to":"a@b.c"}`)
		id1, id2 := l.pending(t, c), l.pending(t, c)
		if id1 != id2 {
			t.Fatal("a second prompt for the same call")
		}
		c["arguments"] = `{"to":"other@b.c"}`
		if l.pending(t, c) == id1 {
			t.Fatal("different arguments shared an item")
		}
		// The same call id and arguments for another tool is another call.
		c["arguments"] = `{"to":"a@b.c"}`
		c["tool"] = "delete_message"
		if id3 := l.pending(t, c); id3 == id1 {
			t.Fatal("another tool's call got this tool's item")
		}
	})
	// A runtime whose answer was lost sends the same call again after the
	// member rejected it: it learns the rejection and its reason, with the
	// item, and the member is not asked again.
	t.Run("SameCallAfterRejection", func(t *testing.T) {
		c := l.call("mail", "send_email", `{"to":"reject@b.c"}`)
		id := l.pending(t, c)
		if status, _ := decide(l.Member, id, "reject", "reason", "not this one"); status != http.StatusSeeOther {
			t.Fatal(status)
		}
		out := l.check(t, c)
		a, _ := out["approval"].(map[string]any)
		if out["decision"] != "deny" || out["code"] != "approval_denied" || !contains(fmt.Sprint(out["message"]), "not this one") ||
			a == nil || a["id"] != id || a["status"] != "rejected" {
			t.Fatal(out)
		}
		var items int
		if err := l.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM approvals WHERE call_id = $1`, c["call_id"]).Scan(&items); err != nil || items != 1 {
			t.Fatalf("items for the call: %d %v", items, err)
		}
		got, err := l.Client.Gate(context.Background(), client.Call{CallID: c["call_id"].(string), User: dev.DemoMember.Subject,
			ConversationID: "conv-1", TurnID: "turn-1", Connector: "mail", Tool: "send_email", Arguments: `{"to":"reject@b.c"}`})
		if err != nil || got.Allowed || got.Code != "approval_denied" || got.ApprovalID != id {
			t.Fatalf("Gate: %+v %v", got, err)
		}
	})
	t.Run("UnparseableArgumentsAsk", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", `{"to": [unclosed`))
		a, err := l.DB.ApprovalForViewer(context.Background(), id, dev.DemoMember.Subject)
		if err != nil || a.Preview.Parsed || a.Preview.Raw == "" {
			t.Fatalf("%v %+v", err, a.Preview)
		}
	})
	t.Run("ErrUnknownTool", func(t *testing.T) {
		status, out := l.API(l.Key, http.MethodPost, "/api/v1/tool-calls", l.call("mail", "no_such_tool", `{}`))
		if status != http.StatusNotFound || errCode(out) != "unknown_tool" {
			t.Fatal(status, out)
		}
	})
	t.Run("ErrMissingField", func(t *testing.T) {
		c := l.call("mail", "send_email", `{}`)
		delete(c, "user")
		if status, _ := l.API(l.Key, http.MethodPost, "/api/v1/tool-calls", c); status != http.StatusBadRequest {
			t.Fatal(status)
		}
	})
	t.Run("BlockedByPolicy", func(t *testing.T) {
		if _, err := l.DB.SetToolPolicy(context.Background(), approval.SystemActor, "system", "run_command", approval.Policy{Mode: approval.ModeBlock}); err != nil {
			t.Fatal(err)
		}
		out := l.check(t, l.call("system", "run_command", `{"command":"ls"}`))
		if out["decision"] != "deny" || out["code"] != "blocked_by_policy" || out["message"] == "" {
			t.Fatal(out)
		}
	})
	t.Run("ReSyncKeepsPolicy", func(t *testing.T) {
		if err := l.Client.SyncConnector(context.Background(), "system", dev.DemoCatalog["system"]); err != nil {
			t.Fatal(err)
		}
		if out := l.check(t, l.call("system", "run_command", `{}`)); out["code"] != "blocked_by_policy" {
			t.Fatal("re-sync loosened the policy", out)
		}
	})
	t.Run("PendingCommittedBeforeNotify", func(t *testing.T) {
		// A listener that reads the row the moment it hears of it finds it.
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, l.DBURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "LISTEN countersign"); err != nil {
			t.Fatal(err)
		}
		call := l.call("mail", "delete_message", `{"message_id":"m1"}`)
		// The check runs beside the test; its result is read after the
		// notification, on the test's goroutine.
		checked := make(chan error, 1)
		go func() {
			var out map[string]any
			err := l.Client.Do(ctx, http.MethodPost, "/api/v1/tool-calls", call, &out)
			if err == nil && out["decision"] != "pending" {
				err = fmt.Errorf("check answered %v", out)
			}
			checked <- err
		}()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		n, err := conn.WaitForNotification(wctx)
		if err != nil {
			t.Fatal(err)
		}
		reader, err := pgx.Connect(ctx, l.DBURL)
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close(ctx)
		var status string
		if err := reader.QueryRow(ctx, `SELECT status FROM approvals WHERE id::text = COALESCE(($1::jsonb)->>'a', ($1::jsonb)->'as'->>0)`, n.Payload).Scan(&status); err != nil || status != "pending" {
			t.Fatalf("row not visible when announced: %v %q", err, status)
		}
		if err := <-checked; err != nil {
			t.Fatal(err)
		}
	})
}

func TestClaim(t *testing.T) {
	l := newLoop(t)
	args := `{"to":"a@b.c","amount":100}`
	claim := func(key, id, callID, digest string) (int, map[string]any) {
		return l.API(key, http.MethodPost, "/api/v1/approvals/"+id+"/claim", map[string]string{"call_id": callID, "arguments_digest": digest})
	}
	c := l.call("mail", "send_email", args)
	id := l.pending(t, c)
	callID := c["call_id"].(string)

	if status, out := claim(l.Key, id, callID, approval.Digest(args)); status != http.StatusConflict || errCode(out) != "not_approved" {
		t.Fatalf("claim before approval: %d %v", status, out)
	}
	if s, _ := decide(l.Member, id, "approve"); s != http.StatusSeeOther {
		t.Fatal("approve:", s)
	}
	t.Run("ErrEditedArguments", func(t *testing.T) {
		status, out := claim(l.Key, id, callID, approval.Digest(`{"to":"a@b.c","amount":1000}`))
		if status != http.StatusConflict || errCode(out) != "call_mismatch" {
			t.Fatal(status, out)
		}
	})
	t.Run("ErrOtherCallID", func(t *testing.T) {
		status, out := claim(l.Key, id, "call-other", approval.Digest(args))
		if status != http.StatusConflict || errCode(out) != "call_mismatch" {
			t.Fatal(status, out)
		}
	})
	t.Run("ErrOtherKey", func(t *testing.T) {
		if status, _ := claim(l.APIKey(), id, callID, approval.Digest(args)); status != http.StatusNotFound {
			t.Fatal(status)
		}
	})
	t.Run("OKOnce", func(t *testing.T) {
		// Key order and spacing don't matter: the digest is canonical.
		if status, out := claim(l.Key, id, callID, approval.Digest(`{ "amount": 100, "to": "a@b.c" }`)); status != http.StatusOK || out["status"] != "consumed" {
			t.Fatal(status, out)
		}
		if status, out := claim(l.Key, id, callID, approval.Digest(args)); status != http.StatusConflict || errCode(out) != "already_consumed" {
			t.Fatal("second claim:", status, out)
		}
		if l.auditCount(t, id, "claimed") != 1 {
			t.Fatal("claim not audited once")
		}
	})
}

func TestWait(t *testing.T) {
	l := newLoop(t, func(c *web.Config) { c.ApprovalTimeout = 2 * time.Second })
	t.Run("ReturnsAtWaitBound", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", `{}`))
		start := time.Now()
		status, out := l.API(l.Key, http.MethodGet, "/api/v1/approvals/"+id+"?wait=300ms", nil)
		if status != http.StatusOK || out["status"] != "pending" || time.Since(start) < 250*time.Millisecond {
			t.Fatal(status, out)
		}
	})
	t.Run("ExpiresAtCap", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", `{"x":1}`))
		status, out := l.API(l.Key, http.MethodGet, "/api/v1/approvals/"+id+"?wait=10s", nil)
		if status != http.StatusOK || out["status"] != "expired" || out["code"] != "approval_timeout" {
			t.Fatal(status, out)
		}
		if l.auditCount(t, id, "expired") != 1 {
			t.Fatal("expiry not audited")
		}
		if s, _ := decide(l.Member, id, "approve"); s != http.StatusConflict {
			t.Fatal("expired item approved")
		}
	})
	t.Run("ErrOtherKey", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", `{"y":1}`))
		if status, _ := l.API(l.APIKey(), http.MethodGet, "/api/v1/approvals/"+id, nil); status != http.StatusNotFound {
			t.Fatal(status)
		}
	})
	t.Run("ErrBadWait", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", `{"z":1}`))
		if status, _ := l.API(l.Key, http.MethodGet, "/api/v1/approvals/"+id+"?wait=soon", nil); status != http.StatusBadRequest {
			t.Fatal(status)
		}
	})
	t.Run("DisconnectLeaksNothing", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", `{"w":1}`))
		before := l.Hub.Subscribers()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, l.BaseURL+"/api/v1/approvals/"+id+"?wait=30s", nil)
		req.Header.Set("Authorization", "Bearer "+l.Key)
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
		}()
		waitFor(t, func() bool { return l.Hub.Subscribers() == before+1 })
		cancel()
		<-done
		waitFor(t, func() bool { return l.Hub.Subscribers() == before })
	})
}

func TestGateFailsClosed(t *testing.T) {
	l := newLoop(t)
	call := client.Call{CallID: "c1", User: dev.DemoMember.Subject, ConversationID: "conv", TurnID: "t", Connector: "mail", Tool: "send_email", Arguments: `{}`}
	t.Run("UnknownTool", func(t *testing.T) {
		c := call
		c.Tool = "nope"
		out, err := l.Client.Gate(context.Background(), c)
		if out.Allowed || out.Code != "policy_unavailable" || err == nil {
			t.Fatal(out, err)
		}
	})
	t.Run("ServerDown", func(t *testing.T) {
		dead := client.New("http://127.0.0.1:1", l.Key)
		out, err := dead.Gate(context.Background(), call)
		if out.Allowed || out.Code != "policy_unavailable" || out.Message == "" || err == nil {
			t.Fatal(out, err)
		}
	})
	t.Run("DatabaseDownThenBack", func(t *testing.T) {
		c := call
		c.Tool, c.Arguments = "search_messages", `{"q":1}`
		// Make the check fail inside the database, then restore it.
		if _, err := l.DB.Pool.Exec(context.Background(), `ALTER TABLE approvals RENAME TO approvals_away`); err != nil {
			t.Fatal(err)
		}
		c2 := call
		c2.CallID = "c2"
		out, err := l.Client.Gate(context.Background(), c2)
		var ce *client.Error
		if out.Allowed || out.Code != "policy_unavailable" || !errors.As(err, &ce) || ce.Status != http.StatusInternalServerError {
			t.Fatal("allowed while the check could not run, or refused for another reason:", out, err)
		}
		if _, err := l.DB.Pool.Exec(context.Background(), `ALTER TABLE approvals_away RENAME TO approvals`); err != nil {
			t.Fatal(err)
		}
		// A failure is not remembered: the next check starts fresh.
		out, err = l.Client.Gate(context.Background(), c)
		if !out.Allowed || err != nil {
			t.Fatal(out, err)
		}
	})
	t.Run("BadAPIKey", func(t *testing.T) {
		out, err := client.New(l.BaseURL, "cs_nope").Gate(context.Background(), call)
		if out.Allowed || out.Code != "policy_unavailable" || err == nil {
			t.Fatal(out, err)
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
