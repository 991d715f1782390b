package approval

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzArguments: parsing never panics, an accepted text is a JSON object
// that encoding/json agrees on, equal digests imply equal meaning for
// accepted texts, and the preview is always valid, bounded UTF-8.
func FuzzArguments(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"to":"x@y.z","body":"hi"}`, `[1]`, `{"a":{"b":[1,2,{"c":null}]}}`,
		`{"u":"https://e.com/p?q=1#f"}`, `{"a":1,"a":2}`, `{"n":1e400}`, "{\"a\":\"\xff\"}", `{"a":"\u0000"}`, `nul`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a := ParseArguments(raw)
		if a.Parsed {
			var m map[string]any
			if err := json.Unmarshal([]byte(raw), &m); err != nil {
				t.Fatalf("accepted %q but encoding/json says %v", raw, err)
			}
			if len(m) != len(a.Members) {
				t.Fatalf("members %d vs %d", len(a.Members), len(m))
			}
		}
		p := Preview(a)
		check := func(s string, limit int) {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 in preview: %q", s)
			}
			for _, r := range s {
				if r == 0 {
					t.Fatal("NUL in preview")
				}
			}
			if utf8.RuneCountInString(s) > limit {
				t.Fatalf("preview text longer than %d", limit)
			}
		}
		check(p.Raw, PreviewWholeChars)
		check(p.RawTail, PreviewWholeChars)
		if len(p.Lines) > PreviewMaxLines {
			t.Fatal("too many lines")
		}
		for _, l := range p.Lines {
			check(l.Key, PreviewKeyChars)
			check(l.Value+l.Tail, PreviewURLPath+PreviewWholeChars)
			if l.Shortened != (l.Tail != "") {
				t.Fatalf("a shortened value without its end, or an end without a fold: %+v", l)
			}
		}
	})
}
