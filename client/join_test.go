package client_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/internal/testenv"
)

// guardCalls are one call as two guards send it: a coding agent's hook
// (its session and prompt) and the MCP gateway (its own conversation and
// turn), with one call id and one argument object in two texts.
func guardCalls(id string) (hook, gateway client.Call) {
	hook = memberCall(id, `{"to":"once@example.com","subject":"hi"}`)
	hook.ConversationID, hook.TurnID, hook.AttachToPending = "session-1", "prompt-1", true
	gateway = memberCall(id, `{"subject": "hi", "to": "once@example.com"}`)
	gateway.ConversationID, gateway.TurnID, gateway.AttachToPending = "mcp/mail/0a1b", "call/0a1b/20261204", true
	return hook, gateway
}

// Two guards of one call, each running client.Gate: one item, one
// decision, each guard allowed once — in either order.
func TestTwoGuardsOfOneCallAgainstServer(t *testing.T) {
	e, c, member := realServer(t)
	ctx := context.Background()
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := e.DB.Pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	t.Run("HookFirst", func(t *testing.T) {
		hook, gateway := guardCalls("toolu_hook_first")
		first := testenv.GateAsync(c, hook)
		id := pendingID(t, e, hook.CallID)
		decide(t, member, id, url.Values{"decision": {"approve"}})
		if r := <-first; r.Err != nil || !r.Out.Allowed || r.Out.Via != "person" {
			t.Fatalf("hook: %+v %v", r.Out, r.Err)
		}
		out, err := c.Gate(ctx, gateway)
		if err != nil || !out.Allowed || out.Via != "joined" {
			t.Fatalf("gateway: %+v %v", out, err)
		}
		if n := count(`SELECT count(*) FROM approvals WHERE call_id = $1`, hook.CallID); n != 1 {
			t.Fatalf("%d items", n)
		}
	})
	t.Run("GatewayFirst", func(t *testing.T) {
		hook, gateway := guardCalls("toolu_gateway_first")
		first := testenv.GateAsync(c, gateway)
		id := pendingID(t, e, gateway.CallID)
		second := testenv.GateAsync(c, hook)
		for deadline := time.Now().Add(10 * time.Second); count(`SELECT count(*) FROM approval_joins WHERE approval_id = $1`, id) == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the hook's check never joined the gateway's item")
			}
		}
		decide(t, member, id, url.Values{"decision": {"approve"}})
		for name, ch := range map[string]chan testenv.GateResult{"gateway": first, "hook": second} {
			if r := <-ch; r.Err != nil || !r.Out.Allowed || r.Out.Via != "person" || r.Out.ApprovalID != id {
				t.Fatalf("%s: %+v %v", name, r.Out, r.Err)
			}
		}
		if n := count(`SELECT count(*) FROM approvals WHERE call_id = $1`, hook.CallID); n != 1 {
			t.Fatalf("%d items", n)
		}
		if n := count(`SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'claimed'`, id); n != 2 {
			t.Fatalf("%d claims, want one per guard", n)
		}
	})
}
