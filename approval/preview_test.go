package approval

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPreview(t *testing.T) {
	long := strings.Repeat("abcdefghij", 500) + "&& rm -rf /srv/app/data/*" // 5025 chars
	url := "https://files.example.com/a/very/long/path/to/report.pdf?token=" + strings.Repeat("z", 5000) + "#frag"
	p := Preview(ParseArguments(`{"to":"a@b.c","body":"` + long + `","count":3,"flags":{"x": [1, 2,  3]},"ok":true,"none":null,"link":"` + url + `"}`))
	if !p.Parsed || len(p.Lines) != 7 {
		t.Fatalf("preview %+v", p)
	}
	want := []PreviewLine{
		{Key: "to", Value: "a@b.c", Length: 5},
		{Key: "body", Value: long[:3072], Tail: long[len(long)-1024:], Length: 5025, Shortened: true},
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
	if !link.Shortened || !strings.HasPrefix(link.Value, "https://files.example.com/a/very/long/path/to/report.pdf?token=zzz") ||
		!strings.HasSuffix(link.Tail, "zzz#frag") || link.Length != utf8.RuneCountInString(url) {
		t.Errorf("url line: %+v", link)
	}
	if !p.Lines[1].Folded() || p.Lines[1].Left() != 5025-4096 || p.Lines[0].Folded() || p.Lines[0].Left() != 0 {
		t.Errorf("fold: %v %d", p.Lines[1].Folded(), p.Lines[1].Left())
	}
	if ShortNote(240, 500) != "(showing the first 240 of 500 characters; the end is not shown)" || FoldNote(929) != "929 characters hidden" {
		t.Error(ShortNote(240, 500), FoldNote(929))
	}
}

// Values up to PreviewWholeChars are kept whole, one character more folds
// the middle and keeps the end; a value is never cut at its end.
func TestPreviewWholeUpToLimit(t *testing.T) {
	whole := strings.Repeat("w", PreviewWholeChars-1) + "Z"
	p := Preview(ParseArguments(`{"cmd":"` + whole + `","more":"` + whole + `Q"}`))
	if l := p.Lines[0]; l.Shortened || l.Value != whole || l.Tail != "" {
		t.Fatalf("a value of %d characters is not whole: %d", PreviewWholeChars, len(l.Value))
	}
	if l := p.Lines[1]; !l.Shortened || !strings.HasSuffix(l.Tail, "ZQ") || l.Left() != 1 ||
		utf8.RuneCountInString(l.Value)+utf8.RuneCountInString(l.Tail) != PreviewWholeChars {
		t.Fatalf("one character over: %+v", l.Left())
	}
}

// Across a card at most PreviewCardChars characters of values are kept:
// the longest values fold first, short ones stay whole, every end is kept.
func TestPreviewCardBudget(t *testing.T) {
	big := strings.Repeat("b", 9000) + "END-OF-BIG"
	args := `{"short":"keep me","a":"` + big + `","b":"` + big + `","c":"` + big + `","d":"` + big + `","e":"` + strings.Repeat("m", 3000) + `"}`
	p := Preview(ParseArguments(args))
	total := 0
	for _, l := range p.Lines {
		total += utf8.RuneCountInString(l.Value) + utf8.RuneCountInString(l.Tail)
		if l.Shortened && !strings.HasSuffix(l.Tail, "END-OF-BIG") {
			t.Errorf("%s: end cut: %q", l.Key, l.Tail[max(0, len(l.Tail)-20):])
		}
	}
	if total > PreviewCardChars {
		t.Fatalf("card keeps %d characters", total)
	}
	if p.Lines[0].Shortened || p.Lines[0].Value != "keep me" {
		t.Error("a short value was folded")
	}
	if !p.Lines[1].Shortened || p.Lines[5].Shortened && p.Lines[5].Left() > p.Lines[1].Left() {
		t.Errorf("not the longest first: %d vs %d", p.Lines[1].Left(), p.Lines[5].Left())
	}
	if total < PreviewCardChars-10 {
		t.Errorf("budget not used: %d", total)
	}
	if got := allowances([]int{10, 5000, 20000}); got[0] != 10 || got[1] != PreviewWholeChars || got[2] != PreviewWholeChars {
		t.Errorf("under budget: %v", got)
	}
	many := make([]int, PreviewMaxLines)
	for i := range many {
		many[i] = 100000
	}
	if got := allowances(many); got[0] != PreviewCardChars/PreviewMaxLines {
		t.Errorf("100 long values: %d each", got[0])
	}
}

func TestPreviewURLKeepsLongPath(t *testing.T) {
	path := "https://example.com/" + strings.Repeat("p", 300) + "?q=" + strings.Repeat("v", 5000) + "&end=1"
	p := Preview(ParseArguments(`{"u":"` + path + `"}`))
	v := p.Lines[0].Value
	if !strings.HasPrefix(v, "https://example.com/"+strings.Repeat("p", 300)+"?q=") {
		t.Fatalf("path cut: %q", v)
	}
	if utf8.RuneCountInString(v) >= utf8.RuneCountInString(path) || !strings.HasSuffix(p.Lines[0].Tail, "v&end=1") {
		t.Fatal("query not folded, or its end not kept")
	}
	// A path longer than the fold keeps is still kept whole.
	long := "https://example.com/" + strings.Repeat("p", 900) + "?q=" + strings.Repeat("v", 5000)
	args := `{"u":"` + long + `"`
	for i := range 10 {
		args += `,"x` + string(rune('0'+i)) + `":"` + strings.Repeat("x", 5000) + `"`
	}
	p = Preview(ParseArguments(args + "}"))
	if v := p.Lines[0].Value; !strings.HasPrefix(v, "https://example.com/"+strings.Repeat("p", 900)+"?q=") {
		t.Fatalf("path cut under a tight budget: %d", len(v))
	}
}

func TestPreviewUnparseable(t *testing.T) {
	raw := `{"a": ` + strings.Repeat("[", 10) + strings.Repeat("x", 400)
	var p ArgumentPreview
	if p := Preview(ParseArguments(raw)); p.Parsed || p.Problem != "not valid JSON" || p.RawShortened || p.Raw != raw {
		t.Fatalf("%+v", p)
	}
	raw += strings.Repeat("y", 5000) + "&& rm -rf /"
	p = Preview(ParseArguments(raw))
	if p.Parsed || !p.RawShortened || p.RawLength != len(raw) || !strings.HasSuffix(p.RawTail, "yyy&& rm -rf /") ||
		!strings.HasPrefix(p.Raw, `{"a": [[[`) || p.RawLeft() != len(raw)-PreviewWholeChars {
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
	tail := strings.Repeat("a", 3500) + "\u202E" + strings.Repeat("txt.exe", 500)
	p := Preview(ParseArguments(`{"file":"` + tail + `","plain":"` + strings.Repeat("b", 300) + `","k\u200by":1}`))
	if !p.Lines[0].Shortened || strings.ContainsRune(p.Lines[0].Value+p.Lines[0].Tail, '\u202E') {
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
	raw := Preview(ParseArguments("[" + strings.Repeat(`"x",`, 1000) + "\"\u2066\"," + strings.Repeat(`"y",`, 1000) + "1]"))
	if raw.Parsed || !raw.RawShortened || !raw.RawHidden {
		t.Errorf("unparsed text with a hidden character beyond the cut: %+v", raw)
	}
}
