package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

func TestCSRF(t *testing.T) {
	e := testenv.NewEnv(t)
	b := e.NewBrowser()
	b.SignIn("admin")
	token := b.CSRF()

	post := func(form url.Values, headers map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, e.BaseURL+"/admin/api-keys", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, _ := b.Do(req)
		return resp.StatusCode
	}
	cases := []struct {
		name    string
		form    url.Values
		headers map[string]string
		want    int
	}{
		{"ErrMissingToken", url.Values{"name": {"k"}}, nil, http.StatusForbidden},
		{"ErrWrongToken", url.Values{"name": {"k"}, "csrf_token": {"nope"}}, nil, http.StatusForbidden},
		{"ErrCrossSite", url.Values{"name": {"k"}, "csrf_token": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"ErrSameSiteOtherOrigin", url.Values{"name": {"k"}, "csrf_token": {token}}, map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"ErrForeignOrigin", url.Values{"name": {"k"}, "csrf_token": {token}}, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"OKFormField", url.Values{"name": {"k1"}, "csrf_token": {token}}, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": e.BaseURL}, http.StatusOK},
		{"OKHeader", url.Values{"name": {"k2"}}, map[string]string{"X-CSRF-Token": token, "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := post(c.form, c.headers); got != c.want {
				t.Fatalf("status %d, want %d", got, c.want)
			}
		})
	}
	// The refused posts made no key; the accepted ones made one each.
	keys, err := e.DB.ListAPIKeys(t.Context())
	var names []string
	for _, k := range keys {
		names = append(names, k.Name)
	}
	if err != nil || strings.Join(names, ",") != "k2,k1" {
		t.Fatalf("keys after the posts: %v %v", names, err)
	}
	t.Run("ErrTokenInQueryOnly", func(t *testing.T) {
		// A token in the URL leaks through logs and Referer: only the POST
		// body and the header count.
		form := url.Values{"name": {"k3"}}
		req, _ := http.NewRequest(http.MethodPost, e.BaseURL+"/admin/api-keys?csrf_token="+url.QueryEscape(token), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Origin", e.BaseURL)
		if resp, _ := b.Do(req); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("token in the query string accepted: %d", resp.StatusCode)
		}
	})
	t.Run("OKMultipartBody", func(t *testing.T) {
		var body strings.Builder
		body.WriteString("--b\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\n" + token + "\r\n")
		body.WriteString("--b\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nk4\r\n--b--\r\n")
		req, _ := http.NewRequest(http.MethodPost, e.BaseURL+"/admin/api-keys", strings.NewReader(body.String()))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		if resp, _ := b.Do(req); resp.StatusCode != http.StatusOK {
			t.Fatalf("token in a multipart body: %d", resp.StatusCode)
		}
	})
	t.Run("ErrTokenOfAnotherSession", func(t *testing.T) {
		other := e.NewBrowser()
		other.SignIn("admin")
		resp, _ := other.PostForm("/admin/api-keys", url.Values{"name": {"x"}, "csrf_token": {token}})
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("another session's token accepted: %d", resp.StatusCode)
		}
	})
	t.Run("ErrLogoutWithoutToken", func(t *testing.T) {
		resp, _ := b.PostForm("/auth/logout", url.Values{"csrf_token": {""}})
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("logout without token: %d", resp.StatusCode)
		}
		if resp, _ := b.Get("/"); resp.StatusCode != http.StatusOK {
			t.Fatalf("signed out by a refused logout: %d", resp.StatusCode)
		}
	})
}

func TestAPIAuth(t *testing.T) {
	e := testenv.NewEnv(t)
	key := e.APIKey()
	body := map[string]any{"display_name": "Mail", "kind": "connector", "tools": []any{}}

	t.Run("OKBearerWithoutCSRF", func(t *testing.T) {
		if status, out := e.API(key, http.MethodPut, "/api/v1/connectors/mail", body); status != http.StatusOK {
			t.Fatalf("status %d %v", status, out)
		}
	})
	t.Run("ErrNoKey", func(t *testing.T) {
		status, out := e.API("", http.MethodPut, "/api/v1/connectors/mail", body)
		if status != http.StatusUnauthorized || errCode(out) != "unauthorized" {
			t.Fatalf("status %d %v", status, out)
		}
	})
	t.Run("ErrWrongKey", func(t *testing.T) {
		if status, _ := e.API("cs_wrong", http.MethodPut, "/api/v1/connectors/mail", body); status != http.StatusUnauthorized {
			t.Fatalf("status %d", status)
		}
	})
	t.Run("ErrRevokedKey", func(t *testing.T) {
		admin := e.NewBrowser()
		admin.SignIn("admin")
		k2 := e.APIKey()
		var id int64
		keys, err := e.DB.ListAPIKeys(t.Context())
		for _, k := range keys {
			if strings.HasPrefix(k2, k.Prefix) {
				id = k.ID
			}
		}
		if err != nil || id == 0 {
			t.Fatalf("key not listed: %v", err)
		}
		resp, _ := admin.PostForm("/admin/api-keys/"+itoa(id)+"/revoke", url.Values{"confirm": {"yes"}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("revoke: %d", resp.StatusCode)
		}
		if status, _ := e.API(k2, http.MethodPut, "/api/v1/connectors/mail", body); status != http.StatusUnauthorized {
			t.Fatalf("revoked key accepted: %d", status)
		}
		if status, _ := e.API(key, http.MethodPut, "/api/v1/connectors/mail", body); status != http.StatusOK {
			t.Fatalf("revoking one key refused another: %d", status)
		}
	})
	t.Run("ErrSessionCookieIsNotAnAPIKey", func(t *testing.T) {
		b := e.NewBrowser()
		b.SignIn("admin")
		req, _ := http.NewRequest(http.MethodGet, e.BaseURL+"/api/v1/approvals/x", nil)
		resp, _ := b.Do(req)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("cookie-authenticated API call: %d", resp.StatusCode)
		}
	})
}

func errCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}
