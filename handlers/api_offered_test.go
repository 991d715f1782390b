package handlers_test

import (
	"fmt"
	"net/http"
	"testing"
)

// offered_decisions narrows the item's standing decisions to those the
// runtime can carry out; Approve and Reject stay; a bad list is refused.
func TestCheckOfferedDecisions(t *testing.T) {
	l := newLoop(t)
	for _, c := range []struct {
		offered []string
		want    string
	}{
		{nil, "[approve approve_conversation always always_matching reject]"},
		{[]string{"approve", "reject", "always"}, "[approve always reject]"},
		{[]string{"approve_conversation"}, "[approve approve_conversation reject]"},
		{[]string{}, "[approve reject]"},
	} {
		call := l.call("mail", "send_email", fmt.Sprintf(`{"to":"%d@b.c"}`, len(c.offered)*10+len(c.want)))
		if c.offered != nil {
			call["offered_decisions"] = c.offered
		}
		out := l.check(t, call)
		a, _ := out["approval"].(map[string]any)
		if a == nil || fmt.Sprint(a["available_decisions"]) != c.want {
			t.Fatalf("offered %v: %v, want %s", c.offered, out, c.want)
		}
	}
	for _, bad := range [][]string{{"approve", "approve"}, {"maybe"}} {
		call := l.call("mail", "send_email", `{"to":"bad@b.c"}`)
		call["offered_decisions"] = bad
		if status, out := l.API(l.Key, http.MethodPost, "/api/v1/tool-calls", call); status != http.StatusBadRequest {
			t.Fatalf("offered %v: %d %v", bad, status, out)
		}
	}
}
