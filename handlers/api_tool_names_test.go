package handlers_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestToolNamesMCPAllows: every tool name MCP's naming guidance allows
// (1–128 of A-Z a-z 0-9 _ - ., a leading underscore or dot included) is a
// name the runtime API takes — in a catalog sync, a single registration
// and a check; a name outside it ('/', a space, only dots) is refused with
// the field named.
func TestToolNamesMCPAllows(t *testing.T) {
	l := newLoop(t)
	tool := func(name string) map[string]any {
		return map[string]any{"name": name, "annotations": map[string]any{"readOnlyHint": true}}
	}
	ok := []string{"_private", "-dash", ".hidden", "admin.tools.list", "DATA_EXPORT_v2", strings.Repeat("_", 128)}
	tools := []any{}
	for _, n := range ok {
		tools = append(tools, tool(n))
	}
	if status, out := l.API(l.Key, http.MethodPut, "/api/v1/connectors/names", map[string]any{"kind": "connector", "tools": tools}); status != http.StatusOK {
		t.Fatal(status, out)
	}
	for _, n := range ok {
		if out := l.check(t, l.call("names", n, `{}`)); out["decision"] != "allow" {
			t.Errorf("%s: %v", n, out)
		}
	}
	if status, out := l.API(l.Key, http.MethodPut, "/api/v1/connectors/names/tools/_single", map[string]any{}); status != http.StatusOK {
		t.Fatal(status, out)
	}
	for _, bad := range []string{"ns/tool", "a b", ".", "..", "caf\u00e9", strings.Repeat("x", 129)} {
		status, out := l.API(l.Key, http.MethodPut, "/api/v1/connectors/names", map[string]any{"kind": "connector", "tools": []any{tool("ok"), tool(bad)}})
		msg, _ := out["error"].(map[string]any)["message"].(string)
		if status != http.StatusBadRequest || !strings.HasPrefix(msg, "tools[1].name must be") {
			t.Errorf("%q: %d %v", bad, status, out)
		}
	}
}
