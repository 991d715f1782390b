package client_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/web"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWith(m, startExampleServer)) }

// realServer starts Countersign with the demo catalog and returns a client
// for it and the demo member, signed in.
func realServer(t *testing.T, opts ...testenv.Option) (*testenv.Env, *client.Client, *testenv.Browser) {
	t.Helper()
	e := testenv.NewEnv(t, opts...)
	c := client.New(e.BaseURL, e.APIKey())
	for name, conn := range dev.DemoCatalog {
		if err := c.SyncConnector(context.Background(), name, conn); err != nil {
			t.Fatal(err)
		}
	}
	member := e.NewBrowser()
	member.SignIn("member")
	return e, c, member
}

func memberCall(id, args string) client.Call {
	return client.Call{CallID: id, User: dev.DemoMember.Subject, ConversationID: "conv-c", TurnID: "turn-c",
		Connector: "mail", Tool: "send_email", Arguments: args}
}

// pendingID waits until the call's item is pending and returns its id.
func pendingID(t *testing.T, e *testenv.Env, callID string) string {
	t.Helper()
	var id string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := e.DB.Pool.QueryRow(context.Background(),
			`SELECT id::text FROM approvals WHERE call_id = $1 AND status = 'pending'`, callID).Scan(&id)
		if err == nil {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("call %s never became pending: %v", callID, err)
		}
	}
}

func decide(t *testing.T, b *testenv.Browser, id string, form url.Values) {
	t.Helper()
	if resp, body := b.PostForm("/approvals/"+id+"/decision", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("decision: %d %s", resp.StatusCode, body)
	}
}

func dbStatus(t *testing.T, e *testenv.Env, id string) string {
	t.Helper()
	var s string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT status FROM approvals WHERE id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGateAgainstServer(t *testing.T) {
	e, c, member := realServer(t)
	t.Run("AllowedByPolicy", func(t *testing.T) {
		call := memberCall("r0", `{"query":"invoices"}`)
		call.Tool = "search_messages"
		out, err := c.Gate(context.Background(), call)
		if err != nil || !out.Allowed || out.Via != "policy" || out.ApprovalID != "" {
			t.Fatalf("%+v %v", out, err)
		}
	})
	t.Run("Approved", func(t *testing.T) {
		res := testenv.GateAsync(c, memberCall("r1", `{"to":"a@example.com"}`))
		id := pendingID(t, e, "r1")
		decide(t, member, id, url.Values{"decision": {"approve"}})
		r := <-res
		if r.Err != nil || !r.Out.Allowed || r.Out.Via != "person" || r.Out.Scope != "once" || r.Out.ApprovalID != id || r.Out.Code != "" {
			t.Fatalf("%+v %v", r.Out, r.Err)
		}
		// Gate claimed it: the approval is used up.
		if s := dbStatus(t, e, id); s != "consumed" {
			t.Fatalf("status after Gate: %s", s)
		}
	})
	t.Run("Rejected", func(t *testing.T) {
		res := testenv.GateAsync(c, memberCall("r2", `{"to":"b@example.com"}`))
		id := pendingID(t, e, "r2")
		decide(t, member, id, url.Values{"decision": {"reject"}, "reason": {"Use the billing alias"}})
		r := <-res
		wantClosed(t, r.Out, r.Err, "approval_denied")
		if r.Err != nil || r.Out.ApprovalID != id || !strings.Contains(r.Out.Message, `"Use the billing alias"`) {
			t.Fatalf("%+v %v", r.Out, r.Err)
		}
		if s := dbStatus(t, e, id); s != "rejected" {
			t.Fatalf("status: %s", s)
		}
	})
	t.Run("TurnCancelled", func(t *testing.T) {
		call := memberCall("r3", `{"to":"c@example.com"}`)
		res := testenv.GateAsync(c, call)
		id := pendingID(t, e, "r3")
		if n, err := c.CancelTurn(context.Background(), call.User, call.ConversationID, call.TurnID); err != nil || n != 1 {
			t.Fatalf("cancel: %d %v", n, err)
		}
		r := <-res
		wantClosed(t, r.Out, r.Err, "approval_cancelled")
		if r.Err != nil || r.Out.ApprovalID != id {
			t.Fatalf("%+v %v", r.Out, r.Err)
		}
	})
}

func TestGateTimeoutAgainstServer(t *testing.T) {
	e, c, _ := realServer(t, func(cfg *web.Config) { cfg.ApprovalTimeout = time.Second })
	out, err := c.Gate(context.Background(), memberCall("t1", `{"to":"late@example.com"}`))
	wantClosed(t, out, err, "approval_timeout")
	if err != nil || out.ApprovalID == "" || !strings.Contains(out.Message, "in time") {
		t.Fatalf("%+v %v", out, err)
	}
	if s := dbStatus(t, e, out.ApprovalID); s != "expired" {
		t.Fatalf("status: %s", s)
	}
}
