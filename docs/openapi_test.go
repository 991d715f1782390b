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
