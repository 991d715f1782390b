package handlers_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestEncodedPathNames: a name is the same name however a client encodes
// it (Python's quote(name, safe=""), JavaScript's encodeURIComponent), and
// it is decoded once only.
func TestEncodedPathNames(t *testing.T) {
	l := newLoop(t)
	sync := map[string]any{"kind": "connector", "tools": []any{map[string]any{"name": "t.one", "annotations": map[string]any{"readOnlyHint": true}}}}
	cases := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{"SyncEncoded", http.MethodPut, "/api/v1/connectors/ns%3Apy", sync, http.StatusOK},
		{"SyncLowerHex", http.MethodPut, "/api/v1/connectors/ns%3apy", sync, http.StatusOK},
		{"ToolEncoded", http.MethodPut, "/api/v1/connectors/ns%3Apy/tools/t%2Etwo", map[string]any{}, http.StatusOK},
		{"DoubleEncodedIsNotTheName", http.MethodPut, "/api/v1/connectors/ns%253Apy", sync, http.StatusBadRequest},
		{"SlashIsNotASeparator", http.MethodPut, "/api/v1/connectors/ns%2Fpy", sync, http.StatusBadRequest},
		{"PlaybookEncoded", http.MethodPut, "/api/v1/playbooks/pb%3Adaily.v1", map[string]any{"owner": "demo-member",
			"definition": map[string]any{"name": "Daily", "steps": []any{map[string]any{"id": "s1", "work_type": map[string]any{"id": "w", "version": "1"}, "tools": []any{map[string]any{"connector": "ns:py", "tool": "t.one"}}}}}}, http.StatusOK},
		{"DeleteEncoded", http.MethodDelete, "/api/v1/connectors/ns%3Apy", nil, http.StatusNoContent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, out := l.API(l.Key, tc.method, tc.path, tc.body)
			if status != tc.status {
				t.Fatalf("%s %s: %d %v, want %d", tc.method, tc.path, status, out, tc.status)
			}
		})
		if tc.name == "ToolEncoded" {
			if out := l.check(t, l.call("ns:py", "t.one", `{}`)); out["decision"] != "allow" {
				t.Fatalf("the tool synced under the encoded name is not ns:py/t.one: %v", out)
			}
			if _, _, retired := l.toolPolicy(t, "ns:py", "t.two"); retired {
				t.Fatal("t.two is retired")
			}
		}
	}
}

// TestApprovalIDForms: an item answers to its id exactly as issued; other
// spellings Postgres would read as the same UUID are 404.
func TestApprovalIDForms(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("mail", "send_email", `{"to":"a@example.com"}`))
	if status, out := l.API(l.Key, http.MethodGet, "/api/v1/approvals/"+id, nil); status != http.StatusOK {
		t.Fatal(status, out)
	}
	for _, form := range []string{strings.ToUpper(id), "%7B" + id + "%7D", strings.ReplaceAll(id, "-", ""), "urn:uuid:" + id} {
		if status, out := l.API(l.Key, http.MethodGet, "/api/v1/approvals/"+form, nil); status != http.StatusNotFound {
			t.Errorf("%s: %d %v, want 404", form, status, out)
		}
		if resp, _ := l.Member.Get("/approvals/" + form); resp.StatusCode != http.StatusNotFound {
			t.Errorf("page %s: %d, want 404", form, resp.StatusCode)
		}
	}
}
