package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"
)

func TestFieldName(t *testing.T) {
	cases := map[string]string{"": "body", "/user": "user", "/tools/0/name": "tools[0].name",
		"/definition/steps/12/tools/3/tool": "definition.steps[12].tools[3].tool", "/a~1b": "a/b"}
	for ptr, want := range cases {
		if got := fieldName(jsontext.Pointer(ptr)); got != want {
			t.Errorf("%q: %q, want %q", ptr, got, want)
		}
	}
}

func TestScanBody(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"a":"b","c":[1,{"d":true}]}`, ""},
		{`{"a":"b","c":[1,{"d":null}]}`, "The field c[1].d must not be null"},
		{"  ", "The request body is empty"},
		{`[1]`, "The request body must be a JSON object."},
		{`"x"`, "The request body must be a JSON object."},
		{`{"a":1`, "The request body is not valid JSON."},
		{`{"a":1}{"b":2}`, "The request body must hold one JSON object"},
		{`{"a":1} x`, "The request body must hold one JSON object"},
		{`{"a":1,"a":2}`, "The field a is sent twice."},
		{`{"t":[{"n":1,"n":1}]}`, "The field t[0].n is sent twice."},
		{"{\"a\":\"\xff\"}", "The request body is not valid UTF-8."},
		{`{"a":"x\u0000"}`, "The field a holds a NUL character"},
		{`{"t":[{"d":"\u0000"}]}`, "The field t[0].d holds a NUL character"},
		{`{"a\u0000":1}`, "A field name in the request body holds a NUL character"},
		{`{"arguments":"x\u0000"}`, ""}, // judged later, as sent
		{`{"x":{"arguments":"\u0000"}}`, "The field x.arguments holds a NUL character"},
	}
	for _, c := range cases {
		err := scanBody([]byte(c.body), []string{"/arguments"})
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.body, err)
			}
			continue
		}
		if e := approval.AsError(err); e == nil || e.Kind != approval.KindInvalid || !strings.HasPrefix(e.Message, c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
}

// decodeJSON refuses every body scanBody refuses, with the same words,
// whether or not it runs scanBody before decoding.
func TestDecodeJSONRefusesWhatScanBodyRefuses(t *testing.T) {
	bodies := []string{"  ", `[1]`, `"x"`, `null`, `{"a":1`, `{"a":1}{"b":2}`, `{"a":1} x`, `{"a":1,"a":2}`,
		`{"t":[{"n":1,"n":1}]}`, "{\"a\":\"\xff\"}", `{"a":"x\u0000"}`, `{"a\u0000":1}`, `{"x":{"arguments":"\u0000"}}`,
		"{\"a\":\"x\x00\"}"}
	for _, body := range bodies {
		want := scanBody([]byte(body), []string{"/arguments"})
		if want == nil {
			want = invalid("The request body is not valid JSON.")
		}
		c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)), httptest.NewRecorder())
		var v struct {
			A         any    `json:"a"`
			T         any    `json:"t"`
			X         any    `json:"x"`
			Arguments string `json:"arguments"`
		}
		got := decodeJSON(c, &v, "/arguments")
		if g, w := approval.AsError(got), approval.AsError(want); g == nil || g.Message != w.Message {
			t.Errorf("%q: %v, want %v", body, got, want)
		}
	}
}
