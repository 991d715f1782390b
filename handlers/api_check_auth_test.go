package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/db"
)

// The check authenticates its key in the round trip that reads the tool: a
// missing, unknown or revoked key is refused before anything is decided or
// written, and a body that is not a check is refused as unauthorized when
// the key is not valid either — nothing is said about the body to a caller
// without a key.
func TestCheckAuthenticatesItsKey(t *testing.T) {
	l := newLoop(t)
	written := func() (n int) {
		t.Helper()
		if err := l.DB.Pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM approvals) + (SELECT count(*) FROM audit_events
			WHERE action IN ('approval requested', 'blocked by policy', 'auto-approved by Always allow'))`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	call := l.call("mail", "send_email", `{"to":"a@b.c"}`)
	before := written()
	for name, key := range map[string]string{"Missing": "", "Unknown": "cs_" + strings.Repeat("x", 43), "NotAKey": "hello"} {
		status, out := l.API(key, http.MethodPost, "/api/v1/tool-calls", call)
		if e, _ := out["error"].(map[string]any); status != http.StatusUnauthorized || e["code"] != "unauthorized" {
			t.Fatalf("%s key: %d %v", name, status, out)
		}
	}
	if status, out := l.API("cs_"+strings.Repeat("y", 43), http.MethodPost, "/api/v1/tool-calls", `{"call_id":`); status != http.StatusUnauthorized {
		t.Fatalf("a broken body with an unknown key: %d %v", status, out)
	}
	if status, out := l.API(l.Key, http.MethodPost, "/api/v1/tool-calls", `{"call_id":`); status != http.StatusBadRequest {
		t.Fatalf("a broken body with a valid key: %d %v", status, out)
	}
	if got := written(); got != before {
		t.Fatalf("refused checks wrote %d rows", got-before)
	}
	if out := l.check(t, call); out["decision"] != "pending" {
		t.Fatal("the valid key's check:", out)
	}
	keys, err := l.DB.ListAPIKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := l.DB.RevokeAPIKey(t.Context(), k.ID, db.User{}); err != nil {
			t.Fatal(err)
		}
	}
	before = written()
	call = l.call("mail", "send_email", `{"to":"other@b.c"}`)
	if status, out := l.API(l.Key, http.MethodPost, "/api/v1/tool-calls", call); status != http.StatusUnauthorized {
		t.Fatalf("a revoked key's check: %d %v", status, out)
	}
	if got := written(); got != before {
		t.Fatalf("a revoked key's check wrote %d rows", got-before)
	}
}
