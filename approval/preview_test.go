package approval

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPreview(t *testing.T) {
	long := strings.Repeat("abcdefghij", 50) // 500 chars
	url := "https://files.example.com/a/very/long/path/to/report.pdf?token=" + strings.Repeat("z", 400) + "#frag"
	p := Preview(ParseArguments(`{"to":"a@b.c","body":"` + long + `","count":3,"flags":{"x": [1, 2,  3]},"ok":true,"none":null,"link":"` + url + `"}`))
	if !p.Parsed || len(p.Lines) != 7 {
		t.Fatalf("preview %+v", p)
	}
	want := []PreviewLine{
		{Key: "to", Value: "a@b.c", Length: 5},
		{Key: "body", Value: long[:PreviewValueChars], Length: 500, Shortened: true},
		{Key: "count", Value: "3", Length: 1},
		{Key: "flags", Value: `{"x":[1,2,3]}`, Length: 13},
		{Key: "ok", Value: "true", Length: 4},
		{Key: "none", Value: "null", Length: 4},
	}
	for i, w := range want {
		if p.Lines[i] != w {
			t.Errorf("line %d: %+v, want %+v", i, p.Lines[i], w)
		}
	}
	link := p.Lines[6]
	if !link.Shortened || !strings.HasPrefix(link.Value, "https://files.example.com/a/very/long/path/to/report.pdf?token=zzz") || link.Length != utf8.RuneCountInString(url) {
		t.Errorf("url line: %+v", link)
	}
	if ShortNote(500) != "(showing part of 500 characters)" {
		t.Error(ShortNote(500))
	}
}

func TestPreviewURLKeepsLongPath(t *testing.T) {
	path := "https://example.com/" + strings.Repeat("p", 300) + "?q=" + strings.Repeat("v", 300)
	p := Preview(ParseArguments(`{"u":"` + path + `"}`))
	v := p.Lines[0].Value
	if !strings.HasPrefix(v, "https://example.com/"+strings.Repeat("p", 300)+"?q=") {
		t.Fatalf("path cut: %q", v)
	}
	if utf8.RuneCountInString(v) >= utf8.RuneCountInString(path) {
		t.Fatal("query tail not shortened")
	}
}

func TestPreviewUnparseable(t *testing.T) {
	raw := `{"a": ` + strings.Repeat("[", 10) + strings.Repeat("x", 400)
	p := Preview(ParseArguments(raw))
	if p.Parsed || p.Problem != "not valid JSON" || !p.RawShortened || p.RawLength != len(raw) || utf8.RuneCountInString(p.Raw) != PreviewValueChars {
		t.Fatalf("%+v", p)
	}
}

func TestPreviewSanitises(t *testing.T) {
	p := Preview(ParseArguments(`{"a":"nul\u0000here","<b>":"<img src=x onerror=alert(1)>"}`))
	if strings.ContainsRune(p.Lines[0].Value, 0) {
		t.Fatal("NUL kept (Postgres cannot store it)")
	}
	if p.Lines[1].Key != "<b>" || p.Lines[1].Value != "<img src=x onerror=alert(1)>" {
		t.Fatal("preview must keep text as text; escaping is the page's job")
	}
	many := "{"
	for i := 0; i < PreviewMaxLines+5; i++ {
		if i > 0 {
			many += ","
		}
		many += `"k` + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + itoa3(i) + `":1`
	}
	many += "}"
	p = Preview(ParseArguments(many))
	if len(p.Lines) != PreviewMaxLines || p.MoreKeys != 5 {
		t.Fatalf("lines %d more %d", len(p.Lines), p.MoreKeys)
	}
}

func itoa3(i int) string {
	return string(rune('0'+i/100)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
}

// A hidden character beyond the part of a value that is kept still flags
// the line, so the card warns about text the reviewer cannot see yet.
func TestPreviewHiddenBeyondCut(t *testing.T) {
	tail := strings.Repeat("a", PreviewValueChars+10) + "\u202Etxt.exe"
	p := Preview(ParseArguments(`{"file":"` + tail + `","plain":"` + strings.Repeat("b", 300) + `","k\u200by":1}`))
	if !p.Lines[0].Shortened || strings.ContainsRune(p.Lines[0].Value, '\u202E') {
		t.Fatalf("the marker should be beyond the cut: %+v", p.Lines[0])
	}
	if !p.Lines[0].Hidden {
		t.Error("a value with a hidden character beyond the cut is not flagged")
	}
	if p.Lines[1].Hidden {
		t.Error("a plain value is flagged")
	}
	if !p.Lines[2].Hidden {
		t.Error("a key with a zero-width space is not flagged")
	}
	raw := Preview(ParseArguments("[" + strings.Repeat(`"x",`, 100) + "\"\u2066\"]"))
	if raw.Parsed || !raw.RawShortened || !raw.RawHidden {
		t.Errorf("unparsed text with a hidden character beyond the cut: %+v", raw)
	}
}
