package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

func toolID(t *testing.T, e *testenv.Env, connector, name string) string {
	t.Helper()
	var id int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM tools WHERE connector = $1 AND name = $2`, connector, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(id, 10)
}

func toolVersion(t *testing.T, e *testenv.Env, id string) string {
	t.Helper()
	var v int
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT policy_version FROM tools WHERE id = $1`, id).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(v)
}

// mustDecide posts a decision that must succeed: a test that builds on it
// must not go on after a refused decision.
func mustDecide(t *testing.T, b *testenv.Browser, id, decision string) {
	t.Helper()
	if s, body := decide(b, id, decision); s != http.StatusSeeOther {
		t.Fatalf("decide %s on %s: %d\n%s", decision, id, s, body)
	}
}

// mustSavePolicy saves a policy change that must succeed.
func mustSavePolicy(t *testing.T, admin *testenv.Browser, e *testenv.Env, id string, form url.Values) {
	t.Helper()
	if s, body := savePolicy(t, admin, e, id, form); s != http.StatusSeeOther {
		t.Fatalf("save policy %v: %d\n%s", form, s, body)
	}
}

// count runs a count query that must succeed.
func count(t *testing.T, e *testenv.Env, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := e.DB.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// savePolicy posts the policy form as an admin, confirming if asked.
func savePolicy(t *testing.T, admin *testenv.Browser, e *testenv.Env, id string, form url.Values) (int, string) {
	t.Helper()
	form.Set("version", toolVersion(t, e, id))
	if form.Get("action") == "" {
		form.Set("action", "save")
	}
	resp, body := admin.PostForm("/admin/policies/"+id, form)
	if resp.StatusCode == http.StatusOK && strings.Contains(body, `data-testid="impact"`) {
		form.Set("action", "confirm")
		resp, body = admin.PostForm("/admin/policies/"+id, form)
	}
	return resp.StatusCode, body
}

func TestPolicyScreen(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	id := toolID(t, l.Env, "calendar", "create_event")
	create := func(conv, args string) map[string]any {
		c := l.call("calendar", "create_event", args)
		c["conversation_id"] = conv
		return c
	}

	t.Run("ErrNotAdmin", func(t *testing.T) {
		for _, path := range []string{"/admin/policies", "/admin/policies/" + id} {
			if resp, _ := l.Member.Get(path); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("%s: %d", path, resp.StatusCode)
			}
		}
		if resp, _ := l.Member.PostForm("/admin/policies/"+id, url.Values{"mode": {"allow"}, "action": {"save"}}); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("member POST: %d", resp.StatusCode)
		}
	})

	t.Run("Groups", func(t *testing.T) {
		_, body := admin.Get("/admin/policies")
		for _, want := range []string{"System tools", "Mail", "Create event", "Require approval", "read-only", "destructive"} {
			if !strings.Contains(body, want) {
				t.Errorf("policies page lacks %q", want)
			}
		}
	})

	t.Run("TightenAfterAlwaysAllowPrompts", func(t *testing.T) {
		mustDecide(t, l.Member, l.pending(t, create("c1", `{"t":1}`)), "always")
		if out := l.check(t, create("c2", `{"t":2}`)); out["via"] != "always_allow" {
			t.Fatal(out)
		}
		// Loosen to allow, then tighten again: the version decides.
		mustSavePolicy(t, admin, l.Env, id, url.Values{"mode": {"allow"}, "standing_approval": {"1"}})
		if out := l.check(t, create("c2", `{"t":3}`)); out["via"] != "policy" {
			t.Fatal(out)
		}
		mustSavePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}, "standing_approval": {"1"}})
		if out := l.check(t, create("c2", `{"t":4}`)); out["decision"] != "pending" {
			t.Fatal("Always allow survived a policy change:", out)
		}
		n := count(t, l.Env, `SELECT count(*) FROM audit_events WHERE action = 'policy changed'
			AND detail->'before'->>'mode' = 'allow' AND detail->'after'->>'mode' = 'require_approval'`)
		if n != 1 {
			t.Fatalf("policy changed audit lines with before → after: %d", n)
		}
	})

	t.Run("ImpactPreview", func(t *testing.T) {
		mustDecide(t, l.Member, l.pending(t, create("c4", `{"t":6}`)), "approve_conversation")
		mustDecide(t, l.Member, l.pending(t, create("c5", `{"t":7}`)), "approve_conversation")
		mustDecide(t, l.Member, l.pending(t, create("c3", `{"t":5}`)), "always")
		form := url.Values{"mode": {"block"}, "standing_approval": {"1"}, "action": {"save"}, "version": {toolVersion(t, l.Env, id)}}
		resp, body := admin.PostForm("/admin/policies/"+id, form)
		if resp.StatusCode != http.StatusOK || !regexp.MustCompile(`1 “Always allow” grant, 2 conversation grants and 0 playbook pre-approvals will lapse`).MatchString(body) {
			t.Fatalf("impact: %d\n%s", resp.StatusCode, body)
		}
		if out := l.check(t, create("c3", `{"t":8}`)); out["decision"] != "allow" {
			t.Fatal("the preview saved the change:", out)
		}
		form.Set("action", "confirm")
		if resp, _ := admin.PostForm("/admin/policies/"+id, form); resp.StatusCode != http.StatusSeeOther {
			t.Fatal(resp.StatusCode)
		}
		if out := l.check(t, create("c3", `{"t":9}`)); out["code"] != "blocked_by_policy" {
			t.Fatal(out)
		}
	})

	t.Run("StandingApprovalRemovedAndRestored", func(t *testing.T) {
		mustSavePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}, "standing_approval": {"1"}})
		mustDecide(t, l.Member, l.pending(t, create("c6", `{"t":10}`)), "always")
		if out := l.check(t, create("c6", `{"t":13}`)); out["via"] != "always_allow" {
			t.Fatal("the grant under test was not given:", out)
		}
		mustSavePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}})
		out := l.check(t, create("c6", `{"t":11}`))
		if out["decision"] != "pending" || len(out["approval"].(map[string]any)["available_decisions"].([]any)) != 2 {
			t.Fatal(out)
		}
		mustSavePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}, "standing_approval": {"1"}})
		if out := l.check(t, create("c6", `{"t":12}`)); out["decision"] != "pending" {
			t.Fatal("old grant revived:", out)
		}
	})

	t.Run("StaleFormRefused", func(t *testing.T) {
		if toolVersion(t, l.Env, id) == "1" {
			t.Fatal("the policy was never changed; a version-1 form is not stale")
		}
		form := url.Values{"mode": {"allow"}, "action": {"confirm"}, "version": {"1"}}
		if resp, body := admin.PostForm("/admin/policies/"+id, form); resp.StatusCode != http.StatusConflict ||
			!strings.Contains(body, "Someone changed this tool") {
			t.Fatal(resp.StatusCode)
		}
	})
}

func TestConditions(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	id := toolID(t, l.Env, "mail", "send_email")

	resp, body := admin.PostForm("/admin/policies/"+id, url.Values{"mode": {"require_approval"}, "condition": {"args.amount >"}, "action": {"save"}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "does not compile") {
		t.Fatalf("bad expression: %d", resp.StatusCode)
	}
	if s, _ := savePolicy(t, admin, l.Env, id, url.Values{"mode": {"require_approval"}, "standing_approval": {"1"},
		"condition": {`size(args.to) > 1 || args.amount > 100`}}); s != http.StatusSeeOther {
		t.Fatal(s)
	}
	cases := []struct {
		args, want string
	}{
		{`{"to":["a","b"],"amount":1}`, "pending"}, // true
		{`{"to":["a"],"amount":500}`, "pending"},   // true
		{`{"to":["a"],"amount":5}`, "allow"},       // false
		{`{"to":["a"]}`, "pending"},                // missing key
		{`{"to":["a"],"amount":"x"}`, "pending"},   // runtime error
		{`{"to":["a"],"amount":5`, "pending"},      // unparseable
	}
	for _, c := range cases {
		if out := l.check(t, l.call("mail", "send_email", c.args)); out["decision"] != c.want {
			t.Errorf("%s: %v, want %s", c.args, out["decision"], c.want)
		}
	}
	// The test box says what the check would answer.
	_, body = admin.PostForm("/admin/policies/"+id, url.Values{"mode": {"require_approval"}, "condition": {`args.amount > 100`},
		"sample": {`{"amount": 5}`}, "action": {"test"}, "version": {toolVersion(t, l.Env, id)}})
	if !strings.Contains(body, "Runs without asking: the condition is false") {
		t.Fatal("test box, false")
	}
	_, body = admin.PostForm("/admin/policies/"+id, url.Values{"mode": {"require_approval"}, "condition": {`args.amount > 100`},
		"sample": {`{"to": 1}`}, "action": {"test"}, "version": {toolVersion(t, l.Env, id)}})
	if !strings.Contains(body, "Asks a person: the condition could not be evaluated") {
		t.Fatal("test box, missing key")
	}
}

func TestAutoApproveTab(t *testing.T) {
	l := newLoop(t)
	c := func(tool, conv, args string) map[string]any {
		call := l.call("calendar", tool, args)
		if tool == "delete_message" {
			call["connector"] = "mail"
		}
		call["conversation_id"] = conv
		return call
	}
	l.offerStanding(t, "mail", "delete_message")
	mustDecide(t, l.Member, l.pending(t, c("create_event", "c1", `{"a":1}`)), "always")
	mustDecide(t, l.Member, l.pending(t, c("delete_message", "c1", `{"a":2}`)), "approve_conversation")
	resp, body := l.Member.Get("/auto-approve")
	if resp.StatusCode != http.StatusOK || strings.Count(body, `data-testid="grant-row"`) != 2 || !strings.Contains(body, "Calendar") || !strings.Contains(body, "Conversation c1") {
		t.Fatalf("tab: %d", resp.StatusCode)
	}
	ids := regexp.MustCompile(`data-grant-id="(\d+)"`).FindAllStringSubmatch(body, -1)

	t.Run("ErrOtherUsersGrant", func(t *testing.T) {
		admin := l.NewBrowser()
		admin.SignIn("admin")
		if resp, _ := admin.PostForm("/auto-approve/"+ids[0][1]+"/revoke", url.Values{}); resp.StatusCode != http.StatusNotFound {
			t.Fatal(resp.StatusCode)
		}
		if _, b := admin.Get("/auto-approve"); strings.Contains(b, `data-testid="grant-row"`) {
			t.Fatal("another user's grants listed")
		}
	})

	t.Run("RevokeTakesEffectNextCall", func(t *testing.T) {
		if out := l.check(t, c("create_event", "c9", `{"a":3}`)); out["via"] != "always_allow" {
			t.Fatal(out)
		}
		var always string
		if err := l.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM standing_grants WHERE conversation_id IS NULL`).Scan(&always); err != nil {
			t.Fatal(err)
		}
		if resp, _ := l.Member.PostForm("/auto-approve/"+always+"/revoke", url.Values{}); resp.StatusCode != http.StatusSeeOther {
			t.Fatal(resp.StatusCode)
		}
		if out := l.check(t, c("create_event", "c9", `{"a":4}`)); out["decision"] != "pending" {
			t.Fatal("revoked grant still used:", out)
		}
		if n := count(t, l.Env, `SELECT count(*) FROM audit_events WHERE action = 'grant revoked'`); n != 1 {
			t.Fatalf("revocation audit lines %d", n)
		}
	})

	t.Run("LapsedShownAndCleared", func(t *testing.T) {
		if _, err := l.DB.Pool.Exec(context.Background(), `UPDATE tools SET policy_version = policy_version + 1 WHERE name = 'delete_message'`); err != nil {
			t.Fatal(err)
		}
		_, body := l.Member.Get("/auto-approve")
		if !strings.Contains(body, `data-testid="lapsed">Lapsed</span>`) || !strings.Contains(body, "Permission settings changed") {
			t.Fatal("lapse reason not shown")
		}
		if resp, _ := l.Member.PostForm("/auto-approve/clear-lapsed", url.Values{}); resp.StatusCode != http.StatusSeeOther {
			t.Fatal(resp.StatusCode)
		}
		if _, body = l.Member.Get("/auto-approve"); !strings.Contains(body, `data-testid="grants-empty"`) {
			t.Fatal("lapsed grant not cleared")
		}
	})
}

func TestPolicyChangeReachesOtherInstance(t *testing.T) {
	a := newLoop(t)
	b := testenv.NewEnvOn(t, a.DBURL, a.IdP)
	admin := b.NewBrowser()
	admin.SignIn("admin")
	id := toolID(t, a.Env, "mail", "search_messages")
	if out := a.check(t, a.call("mail", "search_messages", `{}`)); out["decision"] != "allow" {
		t.Fatal(out)
	}
	if s, _ := savePolicy(t, admin, b, id, url.Values{"mode": {"block"}}); s != http.StatusSeeOther {
		t.Fatal(s)
	}
	if out := a.check(t, a.call("mail", "search_messages", `{}`)); out["code"] != "blocked_by_policy" {
		t.Fatal("instance A used a stale policy:", out)
	}
}
