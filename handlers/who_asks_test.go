package handlers_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// withRuntime adds members to a call.
func withRuntime(call map[string]any, extra map[string]any) map[string]any {
	for k, v := range extra {
		call[k] = v
	}
	return call
}

// TestCheckRuntimeAndContext: the check takes runtime and context objects
// as the product spec names them, bounds every text in them, and refuses
// anything else naming the field; the diff is not part of the digest.
func TestCheckRuntimeAndContext(t *testing.T) {
	l := newLoop(t)
	rt := map[string]any{"client": "Claude Code", "host": "build-7", "working_directory": "/home/ana/shop"}
	diff := "--- /home/ana/shop/a.txt\n+++ /home/ana/shop/a.txt\n@@ -1,1 +1,1 @@\n-old\n+new\n"
	t.Run("OK", func(t *testing.T) {
		plain := l.check(t, l.call("mail", "send_email", `{"to":"a@b.c"}`))
		with := l.check(t, withRuntime(l.call("mail", "send_email", `{"to":"a@b.c"}`),
			map[string]any{"runtime": rt, "context": map[string]any{"diff": diff}}))
		if with["decision"] != "pending" {
			t.Fatalf("got %v", with)
		}
		digest := func(out map[string]any) any { return out["approval"].(map[string]any)["arguments_digest"] }
		if digest(plain) != digest(with) {
			t.Fatal("the runtime or the diff changed the digest")
		}
		var client, host, dir, kind string
		id := with["approval"].(map[string]any)["id"]
		if err := l.DB.Pool.QueryRow(context.Background(), `SELECT runtime_client, runtime_host, runtime_working_directory,
			jsonb_typeof(context_diff->'files') FROM approvals WHERE id = $1`, id).Scan(&client, &host, &dir, &kind); err != nil {
			t.Fatal(err)
		}
		if client != "Claude Code" || host != "build-7" || dir != "/home/ana/shop" || kind != "array" {
			t.Fatalf("stored %q %q %q %q", client, host, dir, kind)
		}
		// Empty objects and absent fields are fine.
		l.check(t, withRuntime(l.call("mail", "search_messages", `{}`), map[string]any{"runtime": map[string]any{}, "context": map[string]any{}}))
	})
	refused := []struct {
		name  string
		extra map[string]any
		field string
	}{
		{"UnknownRuntimeField", map[string]any{"runtime": map[string]any{"client": "x", "hostname": "y"}}, "runtime.hostname"},
		{"UnknownContextField", map[string]any{"context": map[string]any{"patch": "x"}}, "context.patch"},
		{"RuntimeNotObject", map[string]any{"runtime": "Claude Code"}, "runtime"},
		{"DiffNotString", map[string]any{"context": map[string]any{"diff": 12}}, "context.diff"},
		{"ClientTooLong", map[string]any{"runtime": map[string]any{"client": strings.Repeat("c", 201)}}, "runtime.client is too long"},
		{"HostControl", map[string]any{"runtime": map[string]any{"host": "a\nb"}}, "runtime.host holds a control character"},
		{"DirectoryTooLong", map[string]any{"runtime": map[string]any{"working_directory": "/" + strings.Repeat("d", 4096)}}, "runtime.working_directory is too long"},
		{"DiffTooLong", map[string]any{"context": map[string]any{"diff": strings.Repeat("+", 1<<20+1)}}, "context.diff is too long"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			status, out := l.API(l.Key, http.MethodPost, "/api/v1/tool-calls", withRuntime(l.call("mail", "send_email", `{}`), c.extra))
			if status != http.StatusBadRequest || errCode(out) != "invalid_request" || !strings.Contains(errMessage(out), c.field) {
				t.Fatalf("%d %v (want 400 naming %s)", status, out, c.field)
			}
		})
	}
	t.Run("LimitsAccepted", func(t *testing.T) {
		l.check(t, withRuntime(l.call("mail", "search_messages", `{}`), map[string]any{
			"runtime": map[string]any{"client": strings.Repeat("c", 200), "host": strings.Repeat("h", 200), "working_directory": "/" + strings.Repeat("d", 4095)},
			"context": map[string]any{"diff": strings.Repeat("+", 1<<20)}}))
	})
	l.noErrorLogged(t)
}

// testids finds the elements marked data-testid=id in html and returns
// their text without tags.
func testids(html, id string) []string {
	re := regexp.MustCompile(`(?s)data-testid="` + regexp.QuoteMeta(id) + `"[^>]*>(.*?)</(?:strong|span|td|p|pre)>`)
	tags := regexp.MustCompile(`<[^>]+>`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(html, -1) {
		out = append(out, strings.TrimSpace(tags.ReplaceAllString(m[1], "")))
	}
	return out
}

// cardOf is the inbox card of item id.
func whoCard(t *testing.T, body, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<li class="card[^"]*" id="approval-` + id + `".*?data-testid="decide-form"`).FindString(body)
	if m == "" {
		m = regexp.MustCompile(`(?s)<li class="card[^"]*" id="approval-` + id + `".*?</li>`).FindString(body)
	}
	if m == "" {
		t.Fatalf("no card for %s", id)
	}
	return m
}

// TestWhoAsks: every place a call is shown names the key it came with and
// what its runtime says about itself, so a call from a key named "dev
// runtime" looks different from the demo agent's; the diff is shown line
// by line above the arguments.
func TestWhoAsks(t *testing.T) {
	l := newLoop(t)
	devKey, _, err := l.DB.CreateAPIKey(context.Background(), "dev runtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	diff := "--- /srv/app/main.go\n+++ /srv/app/main.go\n@@ -10,2 +10,2 @@\n func main() {\n-\tserve()\n+\tserveTLS()\n"
	call := withRuntime(l.call("mail", "send_email", `{"to":"a@b.c"}`), map[string]any{
		"runtime": map[string]any{"client": "Claude Code", "host": "build-7", "working_directory": "/srv/app"},
		"context": map[string]any{"diff": diff}})
	status, out := l.API(devKey, http.MethodPost, "/api/v1/tool-calls", call)
	if status != http.StatusOK || out["decision"] != "pending" {
		t.Fatalf("%d %v", status, out)
	}
	devID := out["approval"].(map[string]any)["id"].(string)
	demoID := l.pending(t, l.call("mail", "send_email", `{"to":"c@d.e"}`))

	wantAgent := func(t *testing.T, where, html string) {
		t.Helper()
		if k := testids(html, "agent-key"); len(k) == 0 || k[0] != "dev runtime" {
			t.Errorf("%s: key %q, want dev runtime", where, k)
		}
		if c := testids(html, "agent-client"); len(c) == 0 || c[0] != "Claude Code" {
			t.Errorf("%s: client %q", where, c)
		}
		if h := testids(html, "agent-host"); len(h) == 0 || h[0] != "build-7" {
			t.Errorf("%s: host %q", where, h)
		}
		if d := testids(html, "agent-dir"); len(d) == 0 || d[0] != "/srv/app" {
			t.Errorf("%s: working directory %q", where, d)
		}
	}
	wantDiff := func(t *testing.T, where, html string) {
		t.Helper()
		texts := testids(html, "diff-text")
		if strings.Join(texts, "|") != "func main() {|serve()|serveTLS()" || len(testids(html, "diff-origin")) != 1 {
			t.Errorf("%s: diff lines %q", where, texts)
		}
		if !regexp.MustCompile(`data-kind="remove"[^>]*>\s*<td class="ln" data-testid="diff-old">11</td><td class="ln" data-testid="diff-new"></td><td class="sign" aria-hidden="true">−</td>`).MatchString(html) ||
			!regexp.MustCompile(`data-kind="add"[^>]*>\s*<td class="ln" data-testid="diff-old"></td><td class="ln" data-testid="diff-new">11</td><td class="sign" aria-hidden="true">\+</td>`).MatchString(html) {
			t.Errorf("%s: the changed lines lack their numbers or marks", where)
		}
		if strings.Index(html, `data-testid="diff"`) > strings.Index(html, `data-testid="arguments"`) {
			t.Errorf("%s: the diff is not above the arguments", where)
		}
	}

	_, inbox := l.Member.Get("/")
	devCard, demoCard := whoCard(t, inbox, devID), whoCard(t, inbox, demoID)
	wantAgent(t, "inbox", devCard)
	wantDiff(t, "inbox", devCard)
	if k := testids(demoCard, "agent-key"); len(k) != 1 || k[0] != "test runtime" || len(testids(demoCard, "agent-client")) != 0 || strings.Contains(demoCard, `data-testid="diff"`) {
		t.Errorf("the other key's card: %q", k)
	}
	_, page := l.Member.Get("/approvals/" + devID)
	wantAgent(t, "request page", page)
	wantDiff(t, "request page", page)

	if code, _ := decide(l.Member, devID, "approve"); code != http.StatusOK && code != http.StatusSeeOther {
		t.Fatalf("decide: %d", code)
	}
	_, page = l.Member.Get("/approvals/" + devID)
	if !strings.Contains(page, `data-testid="outcome"`) {
		t.Fatal("not the decided view")
	}
	wantAgent(t, "decided view", page)
	wantDiff(t, "decided view", page)
	late := postDecision(l.Member, l.Member.CSRF(), devID, "reject", true)
	if late.Status != http.StatusConflict || !strings.Contains(late.Body, `data-testid="late-decision"`) {
		t.Fatalf("late answer: %d %v", late.Status, late.Err)
	}
	wantAgent(t, "late view", late.Body)

	admin := l.NewBrowser()
	admin.SignIn("admin")
	_, audit := admin.Get("/admin/audit?action=approval+requested")
	line := regexp.MustCompile(`(?s)<tr class="audit-line" data-testid="audit-line".*?data-testid="audit-details".*?</tr>`).FindAllString(audit, -1)
	found := false
	for _, row := range line {
		if strings.Contains(row, "dev runtime") {
			found = true
			wantAgent(t, "audit", row)
		}
	}
	if !found {
		t.Fatal("no audit line names the dev runtime key")
	}
	_, audit = admin.Get("/admin/audit?action=approved")
	if k := testids(audit, "agent-key"); len(k) == 0 || k[0] != "dev runtime" {
		t.Errorf("the approval's audit line does not name the key: %q", k)
	}
}
