// Package contracte2e checks the runtime API's OpenAPI document with three
// validators written apart from each other — kin-openapi (Go), ajv with
// ajv-formats (JavaScript, `npm ci` in this directory) and Debian's
// python3-jsonschema — so that the contract means the same to any client
// generator: each must accept the document's schemas, and all three must
// agree on a table of valid and invalid bodies (cases.json, taken from the
// API tests) and on every example the document gives.
package contracte2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/docs"
	"github.com/getkin/kin-openapi/openapi3"
)

// validatorCase is one body and the schema it is checked against: kin
// takes the loaded schema, the others the JSON text with references into
// the shared "$defs".
type validatorCase struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Body   any             `json:"body"`
	Valid  *bool           `json:"valid,omitempty"` // nil for the document's examples: they must be valid
	kin    *openapi3.Schema
}

func TestThreeValidatorsAgree(t *testing.T) {
	raw, err := docs.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("kin-openapi refuses the document: %v", err)
	}
	var rawDoc map[string]any
	if err := json.Unmarshal(raw, &rawDoc); err != nil {
		t.Fatal(err)
	}
	defs := rebased(t, rawDoc["components"].(map[string]any)["schemas"])

	cases := tableCases(t, doc)
	examples := exampleCases(t, doc, rawDoc)
	if len(examples) < 30 {
		t.Fatalf("only %d examples in the document", len(examples))
	}
	cases = append(cases, examples...)
	input, _ := json.Marshal(map[string]any{"defs": defs, "cases": cases})
	path := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(path, input, 0o600); err != nil {
		t.Fatal(err)
	}

	kin := make([]bool, len(cases))
	for i, c := range cases {
		kin[i] = c.kin.VisitJSON(c.Body) == nil
	}
	ajv := run(t, node(t), "validate.mjs", path)
	py := run(t, python(t), "validate.py", path)
	for i, c := range cases {
		want := c.Valid == nil || *c.Valid
		if kin[i] != want || ajv[i] != want || py[i] != want {
			t.Errorf("%s: kin-openapi %v, ajv %v, python-jsonschema %v; want %v", c.Name, kin[i], ajv[i], py[i], want)
		}
	}
	t.Logf("%d cases (%d examples from the document), three validators", len(cases), len(examples))
}

// tableCases reads cases.json, whose schema is a component's name.
func tableCases(t *testing.T, doc *openapi3.T) []validatorCase {
	b, err := os.ReadFile("cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Name   string `json:"name"`
		Schema string `json:"schema"`
		Body   any    `json:"body"`
		Valid  bool   `json:"valid"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	var out []validatorCase
	for _, c := range list {
		ref := doc.Components.Schemas[c.Schema]
		if ref == nil {
			t.Fatalf("%s: no schema %s", c.Name, c.Schema)
		}
		valid := c.Valid
		out = append(out, validatorCase{Name: c.Name, Schema: json.RawMessage(`{"$ref":"#/$defs/` + c.Schema + `"}`),
			Body: c.Body, Valid: &valid, kin: ref.Value})
	}
	return out
}

// exampleCases collects every example of a JSON body the document gives:
// request bodies and answers of each operation, and the shared answers.
func exampleCases(t *testing.T, doc *openapi3.T, rawDoc map[string]any) []validatorCase {
	var out []validatorCase
	add := func(at string, mt *openapi3.MediaType, rawMT map[string]any) {
		if mt == nil || mt.Schema == nil {
			return
		}
		schema, _ := json.Marshal(rebased(t, rawMT["schema"]))
		names := make([]string, 0, len(mt.Examples))
		for name := range mt.Examples {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			out = append(out, validatorCase{Name: at + " example " + name, Schema: schema, Body: mt.Examples[name].Value.Value, kin: mt.Schema.Value})
		}
	}
	rawPaths := rawDoc["paths"].(map[string]any)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			rawOp := rawPaths[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
			at := method + " " + path
			if op.RequestBody != nil && op.RequestBody.Ref == "" {
				add(at+" request", op.RequestBody.Value.Content.Get("application/json"), jsonOf(rawOp, "requestBody"))
			}
			for code, resp := range op.Responses.Map() {
				if resp.Ref != "" {
					continue // a shared answer, checked below
				}
				add(at+" "+code, resp.Value.Content.Get("application/json"), jsonOf(rawOp, "responses", code))
			}
		}
	}
	rawResponses := rawDoc["components"].(map[string]any)["responses"].(map[string]any)
	for name, resp := range doc.Components.Responses {
		add("response "+name, resp.Value.Content.Get("application/json"), jsonOf(rawResponses[name].(map[string]any)))
	}
	return out
}

// jsonOf walks the raw document to a response or request body and returns
// its application/json media type.
func jsonOf(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m, _ = m[k].(map[string]any)
	}
	content, _ := m["content"].(map[string]any)
	mt, _ := content["application/json"].(map[string]any)
	return mt
}

// rebased is v with its references "#/components/schemas/X" pointing at
// "#/$defs/X", the place JSON Schema validators look.
func rebased(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte(`"#/components/schemas/`), []byte(`"#/$defs/`))
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func run(t *testing.T, bin, script, path string) []bool {
	t.Helper()
	cmd := exec.Command(bin, script, path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, script, err, stderr.String())
	}
	var res []bool
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s %s: %v: %s", bin, script, err, out)
	}
	return res
}

// node is node with ajv installed (npm ci here); python is Debian's python3,
// whose jsonschema is the distribution's package. Missing, the test is
// skipped, except under COUNTERSIGN_E2E=1 (CI), where it fails.
func node(t *testing.T) string {
	bin, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat("node_modules/ajv/package.json")
	}
	if err == nil {
		_, err = os.Stat("node_modules/ajv-formats/package.json")
	}
	if err != nil {
		missing(t, "node and `npm ci` in e2e/contract", err)
	}
	return bin
}

func python(t *testing.T) string {
	bin := "/usr/bin/python3" // Debian's, with python3-jsonschema
	err := exec.Command(bin, "-c", "import jsonschema").Run()
	if err != nil {
		missing(t, "python3-jsonschema (apt-get install -y python3-jsonschema)", err)
	}
	return bin
}

func missing(t *testing.T, what string, err error) {
	t.Helper()
	if os.Getenv("COUNTERSIGN_E2E") == "1" {
		t.Fatalf("the contract check needs %s: %v", what, err)
	}
	t.Skipf("%s missing (%v)", what, err)
}
