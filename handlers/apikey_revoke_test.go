package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Revoking a key asks first, saying what happens to the runtimes using it;
// only the confirmed post revokes.
func TestAPIKeyRevokeConfirm(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	keys, err := l.DB.ListAPIKeys(t.Context())
	if err != nil || len(keys) == 0 {
		t.Fatal(err)
	}
	path := "/admin/api-keys/" + itoa(keys[0].ID) + "/revoke"
	revoked := func() bool {
		return l.countPlaybookRows(t, `SELECT count(*) FROM api_keys WHERE id = $1 AND revoked_at IS NOT NULL`, keys[0].ID) == 1
	}
	t.Run("AsksFirst", func(t *testing.T) {
		resp, body := admin.PostForm(path, url.Values{})
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-testid="revoke-dialog"`) {
			t.Fatalf("no confirmation: %d", resp.StatusCode)
		}
		if !strings.Contains(visibleText(body), "will be refused") || !strings.Contains(body, `name="confirm" value="yes"`) {
			t.Fatal("the confirmation does not say runtimes using the key will be refused")
		}
		if revoked() {
			t.Fatal("revoked without confirmation")
		}
	})
	t.Run("ErrNoSuchKey", func(t *testing.T) {
		if resp, _ := admin.PostForm("/admin/api-keys/999999/revoke", url.Values{}); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("confirmation for no key: %d", resp.StatusCode)
		}
	})
	t.Run("Confirmed", func(t *testing.T) {
		if resp, _ := admin.PostForm(path, url.Values{"confirm": {"yes"}}); resp.StatusCode != http.StatusSeeOther || !revoked() {
			t.Fatalf("confirmed revoke: %d", resp.StatusCode)
		}
		if status, _ := l.API(l.Key, http.MethodGet, "/api/v1/approvals/x", nil); status != http.StatusUnauthorized {
			t.Fatalf("the revoked key still works: %d", status)
		}
	})
}

// A new key comes with a Copy button (enabled by the page's script, which
// the strict CSP allows: no inline handler).
func TestAPIKeyCopyButton(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	_, body := admin.PostForm("/admin/api-keys", url.Values{"name": {"staging"}})
	if !strings.Contains(body, `data-copy="new-key-value"`) || !strings.Contains(body, `id="new-key-value"`) || strings.Contains(body, "onclick") {
		t.Fatal("no Copy button for the new key")
	}
}

// A signed-in person's 404 page keeps the navigation.
func TestNotFoundKeepsNavigation(t *testing.T) {
	l := newLoop(t)
	resp, body := l.Member.Get("/no-such-page")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `<nav class="nav" aria-label="Main">`) || !strings.Contains(body, `href="/playbooks"`) {
		t.Fatalf("404 without navigation: %d", resp.StatusCode)
	}
	if resp, body := l.NewBrowser().Get("/no-such-page"); resp.StatusCode != http.StatusNotFound || strings.Contains(body, `aria-label="Main"`) {
		t.Fatalf("signed out: %d", resp.StatusCode)
	}
}

// A second standing key of one admin's name is refused on the form with the
// reason (422, the name kept); once that key is revoked, the name may be
// given again.
func TestAPIKeyNameTaken(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	if resp, _ := admin.PostForm("/admin/api-keys", url.Values{"name": {"ci-bot"}}); resp.StatusCode != http.StatusOK {
		t.Fatalf("first ci-bot: %d", resp.StatusCode)
	}
	resp, body := admin.PostForm("/admin/api-keys", url.Values{"name": {"ci-bot"}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(visibleText(body), `A key named "ci-bot" already stands for you.`) ||
		strings.Contains(body, `id="new-key-value"`) {
		t.Fatalf("a second ci-bot: %d %s", resp.StatusCode, visibleText(body))
	}
	if n := l.countPlaybookRows(t, `SELECT count(*) FROM api_keys WHERE name = 'ci-bot'`); n != 1 {
		t.Fatalf("%d keys named ci-bot", n)
	}
	var id int64
	if err := l.DB.Pool.QueryRow(t.Context(), `SELECT id FROM api_keys WHERE name = 'ci-bot'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if resp, _ := admin.PostForm("/admin/api-keys/"+itoa(id)+"/revoke", url.Values{"confirm": {"yes"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	if resp, body := admin.PostForm("/admin/api-keys", url.Values{"name": {"ci-bot"}}); resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="new-key-value"`) {
		t.Fatalf("ci-bot after the first was revoked: %d", resp.StatusCode)
	}
}
