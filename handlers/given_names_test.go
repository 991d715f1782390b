package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
)

// TestGivenNamesFollowTheVisibleTextRule: a key name with a line break is
// refused; one that holds one already (stored before the rule) and one
// with a direction override are shown marked in the keys list and in the
// audit's actor cell; a condition is shown with its line breaks; a webhook
// secret refuses every line separator.
func TestGivenNamesFollowTheVisibleTextRule(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	admin := l.NewBrowser()
	admin.SignIn("admin")

	t.Run("KeyNameWithLineFeedRefused", func(t *testing.T) {
		for _, name := range []string{"ci-bot\nsign in  Avery Admin  approved everything", "ci\u2028bot", "ci\tbot"} {
			resp, body := admin.PostForm("/admin/api-keys", url.Values{"name": {name}})
			if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "cannot hold line breaks") {
				t.Errorf("%q: %d", name, resp.StatusCode)
			}
		}
	})
	t.Run("KeyNamesShownMarked", func(t *testing.T) {
		resp, _ := admin.PostForm("/admin/api-keys", url.Values{"name": {"ci\u202Ebot"}})
		if resp.StatusCode != http.StatusOK {
			t.Fatal(resp.StatusCode)
		}
		// A name stored before names were checked, used by the runtime.
		if _, err := l.DB.Pool.Exec(ctx, `UPDATE api_keys SET name = $1 WHERE key_prefix = $2`,
			"ci-bot\nsign in  Avery Admin  approved everything", l.Key[:9]); err != nil {
			t.Fatal(err)
		}
		l.pending(t, l.call("mail", "send_email", `{"to":"a@example.com"}`))
		for _, page := range []string{"/admin/api-keys", "/admin/audit"} {
			_, body := admin.Get(page)
			if page == "/admin/audit" { // the actor cells (raw fields keep their lines, collapsed)
				var cells []string
				for _, part := range strings.Split(body, `data-testid="audit-actor">`)[1:] {
					cells = append(cells, part[:strings.Index(part, "</td>")])
				}
				body = strings.Join(cells, "\n---\n")
			}
			if strings.Contains(body, "ci-bot\nsign in") || strings.Contains(body, "\u202E") {
				t.Errorf("%s shows a given name unmarked", page)
			}
			if !strings.Contains(body, "ci-bot<span class=\"hidden-char\"") || !strings.Contains(body, "⟨U+000A⟩") {
				t.Errorf("%s does not show the key's line feed marked", page)
			}
		}
		if _, body := admin.Get("/admin/api-keys"); !strings.Contains(body, "⟨U+202E⟩") {
			t.Error("the keys list does not show the override marked")
		}
	})
	t.Run("ConditionKeepsItsLines", func(t *testing.T) {
		cond := "args.amount > 100 // asks above 100\n&& false"
		if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email",
			approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true, Condition: cond}); err != nil {
			t.Fatal(err)
		}
		_, body := admin.Get("/admin/policies")
		code := section(body, `data-testid="condition"`, "</code>")
		if !strings.Contains(code, "// asks above 100\n&amp;&amp; false") {
			t.Errorf("the condition is not shown with its line break: %q", code)
		}
		resp, css := admin.Get("/static/app.css")
		if resp.StatusCode != http.StatusOK || !strings.Contains(css, "code.condition { display: block; white-space: pre-wrap;") {
			t.Error("the condition's lines are not kept by the style sheet")
		}
	})
	t.Run("WebhookSecretRefusesLineSeparators", func(t *testing.T) {
		for _, sep := range []string{"\n", "\r", "\u2028", "\u2029", "\u0085"} {
			resp, body := admin.PostForm("/admin/webhooks", url.Values{"url": {"https://hooks.example.com/x"},
				"secret": {"abcdefgh" + sep + "ijklmnop"}, "events": {"approval.requested"}})
			if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "must not contain line breaks") {
				t.Errorf("secret with U+%04X: %d", []rune(sep)[0], resp.StatusCode)
			}
		}
	})
}
