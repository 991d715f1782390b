package handlers

import "testing"

func TestCell(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"conv-1", "conv-1"},
		{"approved", "approved"},
		{"2026-11-30T10:00:00Z", "2026-11-30T10:00:00Z"},
		{`{"code":"x"}`, `{"code":"x"}`},
		{"a=b", "a=b"},
		{"=HYPERLINK(\"http://evil.example\",\"x\")", "'=HYPERLINK(\"http://evil.example\",\"x\")"},
		{"+1", "'+1"},
		{"-1", "'-1"},
		{"@SUM(1)", "'@SUM(1)"},
		{"\t=1", "'\t=1"},
		{"\r=1", "'\r=1"},
		{"\t", "'\t"},
		{" =1", "' =1"},
		{"\n\n=1", "'\n\n=1"},
		{"\u00a0=1", "'\u00a0=1"},
		{"\u3000@x", "'\u3000@x"},
		{"\uff1d1+1", "'\uff1d1+1"},
		{" plain", " plain"},
	}
	for _, c := range cases {
		if got := cell(c.in); got != c.want {
			t.Errorf("cell(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
