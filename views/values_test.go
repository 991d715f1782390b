package views

import (
	"strings"
	"testing"
)

func TestViewValue(t *testing.T) {
	cases := []struct {
		name, in  string
		shortened bool
		kind      string
	}{
		{"URL", "https://files.example/a/b?token=x", false, valueURL},
		{"List", `["a@x.example","b@x.example"]`, false, valueList},
		{"Structure", `{"a":{"b":[1,2]}}`, false, valueStructure},
		{"ShortenedStructureIsText", `{"a":{"b":[1,`, true, valuePlain},
		{"Prose", "Dear team,\nthanks.", false, valueProse},
		{"Time", "2026-03-01T09:30:00Z", false, valueTime},
		{"Plain", "hello", false, valuePlain},
		{"NotAURL", "javascript:alert(1)", false, valuePlain},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ViewValue(c.in, c.shortened); got.Kind != c.kind {
				t.Fatalf("%q: %s, want %s", c.in, got.Kind, c.kind)
			}
		})
	}
	v := ViewValue("https://files.example/a/b?token=x", false)
	if v.Origin != "https://files.example" || v.Path != "/a/b" || v.Rest != "?token=x" {
		t.Fatalf("url parts %+v", v)
	}
	if s := ViewValue(`{"a":1,"b":2}`, false); !strings.Contains(s.Text, "\n  \"a\": 1") || s.Count != 2 {
		t.Fatalf("pretty %+v", s)
	}
}
