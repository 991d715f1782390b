package handlers_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
)

// The filter offers every action as a checkbox in named groups, and the
// connectors and tools as lists with their display names; a tool can be
// chosen by its display name.
func TestAuditFilterChoices(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	l.pending(t, l.call("files", "delete_file", `{"path":"/a"}`))
	l.pending(t, l.call("mail", "send_email", `{"to":"a@x.example"}`))
	_, body := admin.Get("/admin/audit")
	if strings.Contains(body, "<select id=\"f-action\"") || strings.Contains(body, "multiple") {
		t.Error("actions are still a multi-select")
	}
	for _, g := range []string{"<legend>Decisions</legend>", "<legend>Playbooks</legend>", "<legend>Access</legend>"} {
		if !strings.Contains(body, g) {
			t.Errorf("no group %s", g)
		}
	}
	for _, a := range approval.AllActions {
		if !strings.Contains(body, `type="checkbox" name="action" value="`+a+`"`) {
			t.Errorf("no checkbox for %q", a)
		}
	}
	if !regexp.MustCompile(`<select id="f-connector" name="connector">[\s\S]*?<option value="files">Files</option>`).MatchString(body) {
		t.Error("connectors are not a list with display names")
	}
	if !regexp.MustCompile(`<select id="f-tool" name="tool">[\s\S]*?<option value="delete_file">Delete file \(Files\)</option>`).MatchString(body) {
		t.Error("tools are not a list with display names")
	}
	for _, tool := range []string{"delete_file", "Delete file"} {
		_, body := admin.Get("/admin/audit?" + url.Values{"tool": {tool}}.Encode())
		n := strings.Count(body, `data-testid="audit-line"`)
		if n == 0 || strings.Count(body, "Files · Delete file</bdi> <span class=\"meta mono\"><bdi class=\"untrusted\">files · delete_file</bdi>") != n {
			t.Errorf("filter by %q: %d lines, %d of delete_file", tool, n, strings.Count(body, "Files · Delete file</bdi> <span class=\"meta mono\"><bdi class=\"untrusted\">files · delete_file</bdi>"))
		}
		if !strings.Contains(body, `<option value="delete_file" selected>`) {
			t.Errorf("filter by %q: the list does not show the choice", tool)
		}
	}
	_, body = admin.Get("/admin/audit?" + url.Values{"action": {"approval requested", "sign-in"}}.Encode())
	if !strings.Contains(body, `value="approval requested" checked`) || !strings.Contains(body, `value="sign-in" checked`) || strings.Contains(body, `value="approved" checked`) {
		t.Error("chosen actions are not checked")
	}
}

// A policy change reads as before → after, field by field.
func TestAuditPolicyDiff(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	if _, err := l.DB.SetToolPolicy(t.Context(), approval.SystemActor, "mail", "send_email",
		approval.Policy{Mode: approval.ModeAllow, Condition: "size(args.to) > 1"}); err != nil {
		t.Fatal(err)
	}
	resp, body := admin.Get("/admin/audit?" + url.Values{"action": {"policy changed"}}.Encode())
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.StatusCode)
	}
	m := regexp.MustCompile(`(?s)data-testid="policy-diff">(.*?)</dl>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no before → after")
	}
	text := visibleText(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(strings.ReplaceAll(m[1], "</div>", " / "), " "))
	for _, want := range []string{"Mode Require approval → changed to Allow /", "Standing approval offered → changed to not offered /",
		"Condition none → changed to size(args.to) > 1 /", "Policy version 1 → changed to 2 /"} {
		if !strings.Contains(text, want) {
			t.Errorf("diff lacks %q: %s", want, text)
		}
	}
}
