package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestUnknownUser: a call that would ask someone who has never signed in
// is refused with unknown_user and leaves no item, unless the key lets
// items wait for first-time users; the admins then see them on the API
// keys page.
func TestUnknownUser(t *testing.T) {
	l := newLoop(t) // the demo member is signed in
	ctx := context.Background()
	key, err := l.DB.AuthenticateAPIKey(ctx, l.Key)
	if err != nil {
		t.Fatal(err)
	}
	admin := l.NewBrowser()
	admin.SignIn("admin")
	setFlag := func(allow string) {
		t.Helper()
		resp, body := admin.PostForm("/admin/api-keys/"+strconv.FormatInt(key.ID, 10)+"/first-time-users", url.Values{"allow": {allow}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("set first-time users %s: %d %s", allow, resp.StatusCode, body)
		}
	}
	setFlag("no") // the test key lets items wait for first-time users
	items := func(user string) int {
		var n int
		if err := l.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM approvals WHERE owner_subject = $1`, user).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	as := func(user, tool string) map[string]any {
		c := l.call("mail", tool, `{"to":"a@example.com"}`)
		c["user"] = user
		return l.check(t, c)
	}
	cases := []struct {
		name, flag, user, tool, decision, code string
	}{
		{"TypoRefused", "", "demo-membr", "send_email", "deny", "unknown_user"},
		{"AllowedByPolicyNeedsNobody", "", "demo-membr", "search_messages", "allow", ""},
		{"SignedInAsked", "", "demo-member", "send_email", "pending", ""},
		{"FirstTimeAllowedWaits", "yes", "someone-new", "send_email", "pending", ""},
		{"SwitchedBackRefused", "no", "someone-else", "send_email", "deny", "unknown_user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.flag != "" {
				setFlag(tc.flag)
			}
			out := as(tc.user, tc.tool)
			if out["decision"] != tc.decision || (tc.code != "" && out["code"] != tc.code) {
				t.Fatalf("%v", out)
			}
			if tc.code == "unknown_user" {
				if out["approval"] != nil || items(tc.user) != 0 {
					t.Fatalf("an unknown user got an item: %v", out)
				}
				if msg, _ := out["message"].(string); !strings.Contains(msg, "never signed in") {
					t.Fatalf("message %q", msg)
				}
			}
		})
	}
	t.Run("AdminsSeeWhatWaits", func(t *testing.T) {
		resp, body := admin.Get("/admin/api-keys")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Waiting for someone who has never signed in") ||
			!strings.Contains(body, "someone-new") || strings.Contains(body, "demo-membr<") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
}
