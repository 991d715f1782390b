package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

func itoa(n int64) string { return fmt.Sprint(n) }

func TestSecurityHeaders(t *testing.T) {
	e := testenv.NewEnv(t)
	b := e.NewBrowser()
	b.SignIn("member")
	resp1, body1 := b.Get("/")
	resp2, _ := b.Get("/")
	csp := resp1.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'nonce-", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP lacks %q: %s", want, csp)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP allows unsafe sources: %s", csp)
	}
	n1 := regexp.MustCompile(`'nonce-([^']+)'`).FindStringSubmatch(csp)
	n2 := regexp.MustCompile(`'nonce-([^']+)'`).FindStringSubmatch(resp2.Header.Get("Content-Security-Policy"))
	if n1 == nil || n2 == nil || n1[1] == n2[1] {
		t.Fatal("nonce not fresh per response")
	}
	if !strings.Contains(body1, `nonce="`+n1[1]+`"`) {
		t.Fatal("scripts don't carry the response's nonce")
	}
	if resp1.Header.Get("X-Content-Type-Options") != "nosniff" || resp1.Header.Get("Referrer-Policy") == "" {
		t.Fatal("nosniff / Referrer-Policy missing")
	}
	if resp1.Header.Get("Strict-Transport-Security") != "" {
		t.Fatal("HSTS on plain http")
	}
}

func TestErrorPages(t *testing.T) {
	e := testenv.NewEnv(t)
	b := e.NewBrowser()
	b.SignIn("member")
	resp, body := b.Get("/no/such/page")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "Page not found") {
		t.Fatalf("404 page: %d", resp.StatusCode)
	}
	status, out := e.API(e.APIKey(), http.MethodGet, "/api/v1/nothing", nil)
	if status != http.StatusNotFound || errCode(out) != "not_found" {
		t.Fatalf("API 404: %d %v", status, out)
	}
	status, out = e.API(e.APIKey(), http.MethodPost, "/api/v1/tool-calls", `{"call_id": "x", "surprise": 1}`)
	if status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(out), "surprise") {
		t.Fatalf("unknown field: %d %v", status, out)
	}
	status, _ = e.API(e.APIKey(), http.MethodPost, "/api/v1/tool-calls", `{"call_id": `)
	if status != http.StatusBadRequest {
		t.Fatalf("malformed JSON: %d", status)
	}
}

func TestOperations(t *testing.T) {
	e := testenv.NewEnv(t)
	b := e.NewBrowser()
	if r, body := b.Get("/healthz"); r.StatusCode != http.StatusOK || body != "ok\n" {
		t.Fatalf("healthz %d %q", r.StatusCode, body)
	}
	if r, body := b.Get("/readyz"); r.StatusCode != http.StatusOK {
		t.Fatalf("readyz %d %q", r.StatusCode, body)
	}
	b.Get("/signin")
	r, body := b.Get("/metrics")
	if r.StatusCode != http.StatusOK || !strings.Contains(body, "countersign_http_requests_total") || !strings.Contains(body, "countersign_db_pool_total_conns") {
		t.Fatalf("metrics: %d", r.StatusCode)
	}
	// Without a reachable database the server is not ready.
	e.DB.Pool.Close()
	if r, _ := b.Get("/readyz"); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz with a closed pool: %d", r.StatusCode)
	}
}

func TestAPIKeysPage(t *testing.T) {
	e := testenv.NewEnv(t)
	b := e.NewBrowser()
	b.SignIn("admin")
	resp, body := b.PostForm("/admin/api-keys", url.Values{"name": {"build runtime"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	m := regexp.MustCompile(`data-testid="new-key-value">(cs_[A-Za-z0-9_-]+)<`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("new key not shown")
	}
	if status, _ := e.API(m[1], http.MethodPut, "/api/v1/connectors/x", map[string]any{"kind": "connector", "tools": []any{}}); status != http.StatusOK {
		t.Fatalf("new key rejected: %d", status)
	}
	_, list := b.Get("/admin/api-keys")
	if strings.Contains(list, m[1]) {
		t.Fatal("key shown again on the list")
	}
	// Nowhere in the database, in any form: only its hash and prefix are kept.
	assertKeySearchSees(t, e, m[1])
	if where := tablesHolding(t, e, keyForms(t, m[1])...); len(where) != 0 {
		t.Fatalf("key stored in clear in %v", where)
	}
	resp, body = b.PostForm("/admin/api-keys", url.Values{"name": {"  "}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "needs a name") {
		t.Fatalf("empty name: %d", resp.StatusCode)
	}
	actions := strings.Join(e.AuditActions(), ",")
	if !strings.Contains(actions, "api key created") {
		t.Fatalf("audit: %s", actions)
	}
}

// Pages and fragments for signed-in people, the event stream and the
// runtime API are never stored by browsers or proxies.
func TestNoStore(t *testing.T) {
	e := testenv.NewEnv(t)
	admin := e.NewBrowser()
	admin.SignIn("admin")
	for _, path := range []string{"/", "/auto-approve", "/playbooks", "/admin/policies", "/admin/audit",
		"/admin/audit.csv", "/admin/audit/verify", "/admin/insights", "/admin/api-keys"} {
		t.Run("Page"+path, func(t *testing.T) {
			resp, _ := admin.Get(path)
			if got := resp.Header.Get("Cache-Control"); got != "no-store" {
				t.Fatalf("%s (%d): Cache-Control %q", path, resp.StatusCode, got)
			}
		})
	}
	t.Run("Fragment", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, e.BaseURL+"/", nil)
		req.Header.Set("HX-Request", "true")
		if resp, _ := admin.Do(req); resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("fragment: Cache-Control %q", resp.Header.Get("Cache-Control"))
		}
	})
	t.Run("FormPost", func(t *testing.T) {
		resp, _ := admin.PostForm("/admin/api-keys", url.Values{"name": {"k"}})
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%d: Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	})
	t.Run("API", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, e.BaseURL+"/api/v1/approvals/00000000-0000-0000-0000-000000000000", nil)
		req.Header.Set("Authorization", "Bearer "+e.APIKey())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("API (%d): Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	})
	t.Run("SignedOut", func(t *testing.T) {
		resp, _ := e.NewBrowser().Get("/signin")
		if resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("sign-in page: Cache-Control %q", resp.Header.Get("Cache-Control"))
		}
	})
}

func TestStaticFiles(t *testing.T) {
	e := testenv.NewEnv(t)
	b := e.NewBrowser()
	for _, path := range []string{"/static/", "/static", "/static/.", "/static/%2e/", "/static/nothing.js", "/static/../go.mod"} {
		t.Run("Err"+path, func(t *testing.T) {
			resp, body := b.Get(path)
			if resp.StatusCode != http.StatusNotFound || strings.Contains(body, `href="app.css"`) {
				t.Fatalf("%s: %d, listing shown: %v", path, resp.StatusCode, strings.Contains(body, `href="app.css"`))
			}
		})
	}
	t.Run("OKFile", func(t *testing.T) {
		resp, body := b.Get("/static/app.css")
		if resp.StatusCode != http.StatusOK || body == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age") {
			t.Fatalf("app.css: %d %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	})
}

// TestAdminVersion: an admin reads which build runs and the database's
// schema version; anyone else gets 404, as for every admin page.
func TestAdminVersion(t *testing.T) {
	e := testenv.NewEnv(t)
	b := e.NewBrowser()
	b.SignIn("admin")
	r, body := b.Get("/admin/version")
	schema := fmt.Sprintf("schema    %d\n", db.KnownSchemaVersion())
	if r.StatusCode != http.StatusOK || !strings.HasPrefix(body, "countersign ") || !strings.Contains(body, "revision  ") ||
		!strings.Contains(body, schema) || !strings.Contains(body, fmt.Sprintf("database  schema %d\n", db.KnownSchemaVersion())) {
		t.Fatalf("admin version: %d %q", r.StatusCode, body)
	}
	m := e.NewBrowser()
	m.SignIn("member")
	if r, body := m.Get("/admin/version"); r.StatusCode != http.StatusNotFound || strings.Contains(body, "revision") {
		t.Fatalf("a member's /admin/version: %d", r.StatusCode)
	}
}
