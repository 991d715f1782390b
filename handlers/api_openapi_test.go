package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPIDocument: the document is served without a key, is a valid
// OpenAPI 3.1 document, and lists exactly the runtime API's routes, so a
// route added to web/routes.go without its contract fails here.
func TestOpenAPIDocument(t *testing.T) {
	e := testenv.NewEnv(t)
	resp, err := http.Get(e.BaseURL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var head struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q, %v", head.OpenAPI, err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(body)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("invalid OpenAPI document: %v", err)
	}

	param := regexp.MustCompile(`:([a-z]+)`)
	served := map[string]bool{}
	for _, r := range e.Server.Echo.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") || strings.HasSuffix(r.Path, "/*") {
			continue
		}
		key := r.Method + " " + param.ReplaceAllString(r.Path, "{$1}")
		served[key] = true
		if p := doc.Paths.Find(param.ReplaceAllString(r.Path, "{$1}")); p == nil || p.GetOperation(r.Method) == nil {
			t.Errorf("%s is served but not in docs/openapi.yaml", key)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !served[method+" "+path] {
				t.Errorf("%s %s is in docs/openapi.yaml but not served", method, path)
			}
		}
	}
	if len(served) < 10 {
		t.Fatalf("only %d API routes found: %v", len(served), served)
	}
}
