package handlers_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
)

// policyRow returns the edit path of a tool on the policies screen.
func policyPath(t *testing.T, body, tool string) string {
	t.Helper()
	m := regexp.MustCompile(`data-tool="` + tool + `"[\s\S]*?href="(/admin/policies/\d+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no row for %s", tool)
	}
	return m[1]
}

// The policies screen names each connector once, gives every connector's
// table the same columns, and says in words what a condition does.
func TestPolicyListWords(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	_, body := admin.Get("/admin/policies")
	text := visibleText(body)
	if strings.Contains(text, "Calendar (calendar)") || strings.Contains(text, "Mail (mail)") {
		t.Error("connector names repeated")
	}
	if n, cols := strings.Count(body, `data-testid="policy-table"`), strings.Count(body, `<col class="c-tool">`); n == 0 || cols != n {
		t.Errorf("%d tables, %d with fixed columns", n, cols)
	}
	path := policyPath(t, body, "send_email")
	resp, _ := admin.PostForm(path, url.Values{"mode": {"require_approval"}, "standing_approval": {"1"}, "condition": {"size(args.to) > 1"},
		"version": {"1"}, "action": {"confirm"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatal(resp.StatusCode)
	}
	_, body = admin.Get("/admin/policies")
	if !strings.Contains(visibleText(body), "size(args.to) > 1Asks only when this is true; otherwise runs without asking.") {
		t.Errorf("the condition is not said in words: %s", visibleText(body))
	}
}

// The save message says what changed, part by part.
func TestPolicySaveSaysWhatChanged(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	_, body := admin.Get("/admin/policies")
	path := policyPath(t, body, "send_email")
	resp, _ := admin.PostForm(path, url.Values{"mode": {"allow"}, "condition": {"size(args.to) > 1"}, "version": {"1"}, "action": {"confirm"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatal(resp.StatusCode)
	}
	_, body = admin.Get("/admin/policies")
	want := "Saved Send email (policy version 2): mode Require approval → Allow; standing approval offered → not offered; condition added: size(args.to) > 1."
	if !strings.Contains(visibleText(body), want) {
		t.Fatalf("save message: want %q in %q", want, visibleText(body)[:300])
	}
}

// The condition editor lists the argument names of the tool's recent calls
// (names only, never values) and examples written with them that compile.
func TestPolicyConditionHelp(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	_, body := admin.Get("/admin/policies")
	path := policyPath(t, body, "send_email")
	if _, body := admin.Get(path); !strings.Contains(body, "No calls of this tool yet") {
		t.Fatal("no word for a tool without calls")
	}
	l.pending(t, l.call("mail", "send_email", `{"to":["a@x.example","b@x.example"],"subject":"secret-subject-value","priority":3,"reply-to":"c@x.example"}`))
	_, body = admin.Get(path)
	names := regexp.MustCompile(`(?s)data-testid="argument-names">(.*?)</ul>`).FindStringSubmatch(body)
	if names == nil {
		t.Fatal("no argument names")
	}
	for _, want := range []string{"args.to", "args.subject", "args.priority", `args[&#34;reply-to&#34;]`} {
		if !strings.Contains(names[1], want) {
			t.Errorf("argument %s not listed in %s", want, names[1])
		}
	}
	if strings.Contains(body, "secret-subject-value") {
		t.Error("an argument value is shown")
	}
	exprs := regexp.MustCompile(`(?s)data-testid="condition-examples">(.*?)</ul>`).FindStringSubmatch(body)
	codes := regexp.MustCompile(`<code>(.*?)</code>`).FindAllStringSubmatch(exprs[1], -1)
	if len(codes) < 3 {
		t.Fatalf("examples: %v", codes)
	}
	for _, c := range codes {
		expr := strings.NewReplacer("&#34;", `"`, "&gt;", ">", "&lt;", "<", "&amp;", "&").Replace(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(c[1], ""))
		if err := approval.CompileCondition(expr); err != nil {
			t.Errorf("example %q does not compile: %v", expr, err)
		}
	}
	for _, want := range []string{`args.to.exists(a, !a.endsWith(&#34;@example.com&#34;))`, "args.priority &gt; 100"} {
		if !strings.Contains(exprs[1], want) {
			t.Errorf("no example %s in %s", want, exprs[1])
		}
	}
}
