package docs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestOpenAPIJSON(t *testing.T) {
	b, err := OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{\n  \"openapi\"")) {
		t.Fatalf("the document does not start with openapi 3.1.0: %.80s", b)
	}
}

func TestYAMLToJSON(t *testing.T) {
	got, err := yamlToJSON([]byte("b: 1\na:\n  - true\n  - null\n  - \"200\"\n  - 2.5\n\"200\": x\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"b":1,"a":[true,null,"200",2.5],"200":"x"}`
	var compact bytes.Buffer
	_ = json.Compact(&compact, got)
	if compact.String() != want {
		t.Fatalf("got %s, want %s (keys in source order, strings kept)", compact.String(), want)
	}
	if _, err := yamlToJSON([]byte("when: 2026-11-30T10:00:00Z\n")); err == nil || !strings.Contains(err.Error(), "quote") {
		t.Fatalf("an unquoted timestamp must be refused, got %v", err)
	}
}

func TestOpenAPIServersFromBaseURL(t *testing.T) {
	b, err := OpenAPIJSONFor("https://cs.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string
		Servers []struct{ URL string }
		Paths   map[string]any
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Servers) != 1 || doc.Servers[0].URL != "https://cs.example.com" || len(doc.Paths) < 5 {
		t.Fatalf("%v %+v", err, doc)
	}
	if plain, _ := OpenAPIJSONFor(""); !bytes.Contains(plain, []byte("http://localhost:8080")) {
		t.Fatal("without a base URL the document is served as committed")
	}
}

// TestSharedRefusalsOnEveryOperation: 405 and 413 can answer any request
// (a method its path does not offer, a body over the limit), so every
// operation lists both.
func TestSharedRefusalsOnEveryOperation(t *testing.T) {
	b, err := OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	ops := 0
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			ops++
			for _, code := range []string{"405", "413"} {
				if _, ok := op.Responses[code]; !ok {
					t.Errorf("%s %s does not list %s", strings.ToUpper(method), path, code)
				}
			}
		}
	}
	if ops < 10 {
		t.Fatalf("only %d operations found", ops)
	}
}
