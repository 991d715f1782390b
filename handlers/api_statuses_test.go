package handlers_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

// TestAPIStatusesDeclared: the contract document is public for GET and
// HEAD, no-store, and names this deployment; a wrong method is 405 with
// Allow; a body over the limit is 413 on any operation, no-store too.
func TestAPIStatusesDeclared(t *testing.T) {
	e := testenv.NewEnv(t)
	key := e.APIKey()
	big := `{"a":"` + strings.Repeat("x", 5<<20) + `"}`
	cases := []struct {
		name, method, path, key, body string
		status                        int
		allow                         string
	}{
		{"DocumentGet", http.MethodGet, "/api/v1/openapi.json", "", "", http.StatusOK, ""},
		{"DocumentHead", http.MethodHead, "/api/v1/openapi.json", "", "", http.StatusOK, ""},
		{"DocumentPost", http.MethodPost, "/api/v1/openapi.json", key, "", http.StatusMethodNotAllowed, "GET, HEAD"},
		{"ConnectorGet", http.MethodGet, "/api/v1/connectors/x", key, "", http.StatusMethodNotAllowed, "DELETE, PUT"},
		{"CheckGet", http.MethodGet, "/api/v1/tool-calls", key, "", http.StatusMethodNotAllowed, "POST"},
		{"WrongMethodNoKey", http.MethodGet, "/api/v1/connectors/x", "", "", http.StatusUnauthorized, ""},
		{"UnknownPath", http.MethodGet, "/api/v1/nothing/here", key, "", http.StatusNotFound, ""},
		{"TooLargeEnable", http.MethodPost, "/api/v1/playbooks/x/enable", key, big, http.StatusRequestEntityTooLarge, ""},
		{"TooLargeGet", http.MethodGet, "/api/v1/approvals/0b1e6f3a-6f0e-4c36-9a55-2f1f5e1c9d7e", key, big, http.StatusRequestEntityTooLarge, ""},
		{"TooLargeCheck", http.MethodPost, "/api/v1/tool-calls", key, big, http.StatusRequestEntityTooLarge, ""},
		{"WaitOverItsBound", http.MethodGet, "/api/v1/approvals/0b1e6f3a-6f0e-4c36-9a55-2f1f5e1c9d7e?wait=" + strings.Repeat("0", 32) + "1s", key, "", http.StatusBadRequest, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, e.BaseURL+tc.path, strings.NewReader(tc.body))
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Header.Get("Allow") != tc.allow {
				t.Fatalf("%d Allow=%q %s, want %d Allow=%q", resp.StatusCode, resp.Header.Get("Allow"), body, tc.status, tc.allow)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", cc)
			}
			if tc.status == http.StatusMethodNotAllowed && !strings.Contains(string(body), `"method_not_allowed"`) {
				t.Errorf("body %s", body)
			}
			if tc.name == "DocumentGet" {
				var doc struct{ Servers []struct{ URL string } }
				if err := json.Unmarshal(body, &doc); err != nil || len(doc.Servers) != 1 || doc.Servers[0].URL != strings.TrimRight(e.Config.BaseURL.String(), "/") {
					t.Errorf("servers %+v (%v), want %s", doc.Servers, err, e.Config.BaseURL)
				}
			}
		})
	}
}
