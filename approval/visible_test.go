package approval

import (
	"reflect"
	"testing"
)

func TestVisible(t *testing.T) {
	plain := func(s string) VisibleRun { return VisibleRun{Text: s} }
	mark := func(m, name string) VisibleRun { return VisibleRun{Text: m, Hidden: true, Name: name} }
	tests := []struct {
		name string
		in   string
		kind TextKind
		want []VisibleRun
	}{
		{"Plain", "finance@acme.example", SingleLine, []VisibleRun{plain("finance@acme.example")}},
		{"Empty", "", SingleLine, nil},
		{"NonLatinIsNotHidden", "Zürich 東京 Москва", SingleLine, []VisibleRun{plain("Zürich 東京 Москва")}},
		{"RightToLeftOverride", "invoice_4471_\u202Efdp.exe", MultiLine,
			[]VisibleRun{plain("invoice_4471_"), mark("⟨U+202E⟩", "right-to-left override"), plain("fdp.exe")}},
		{"ZeroWidthSpace", "Pay\u200bPal", SingleLine,
			[]VisibleRun{plain("Pay"), mark("⟨U+200B⟩", "zero-width space"), plain("Pal")}},
		{"LoneCarriageReturn", "finance@acme.example\r", MultiLine,
			[]VisibleRun{plain("finance@acme.example"), mark("⟨U+000D⟩", "carriage return")}},
		{"CRLFInValueKeepsTheLineFeed", "a\r\nb", MultiLine,
			[]VisibleRun{plain("a"), mark("⟨U+000D⟩", "carriage return"), plain("\nb")}},
		{"LineFeedInValue", "line one\nline two", MultiLine, []VisibleRun{plain("line one\nline two")}},
		{"LineFeedInName", "send\nemail", SingleLine,
			[]VisibleRun{plain("send"), mark("⟨U+000A⟩", "line feed"), plain("email")}},
		{"TabIsPlain", "a\tb", SingleLine, []VisibleRun{plain("a\tb")}},
		{"OtherC0", "a\x07\x1b[31mb", SingleLine,
			[]VisibleRun{plain("a"), mark("⟨U+0007⟩", "control character"), mark("⟨U+001B⟩", "escape"), plain("[31mb")}},
		{"Delete", "a\x7f", SingleLine, []VisibleRun{plain("a"), mark("⟨U+007F⟩", "control character")}},
		{"C1", "a\u0085b\u009b", MultiLine,
			[]VisibleRun{plain("a"), mark("⟨U+0085⟩", "next line"), plain("b"), mark("⟨U+009B⟩", "C1 control character")}},
		{"Isolates", "\u2066x\u2069\u061c", SingleLine,
			[]VisibleRun{mark("⟨U+2066⟩", "left-to-right isolate"), plain("x"), mark("⟨U+2069⟩", "pop directional isolate"), mark("⟨U+061C⟩", "Arabic letter mark")}},
		{"Marks", "\u200e\u200f", SingleLine,
			[]VisibleRun{mark("⟨U+200E⟩", "left-to-right mark"), mark("⟨U+200F⟩", "right-to-left mark")}},
		{"ByteOrderMarkAndJoiners", "\ufeff\u2060\u200c\u200d", SingleLine,
			[]VisibleRun{mark("⟨U+FEFF⟩", "zero-width no-break space"), mark("⟨U+2060⟩", "word joiner"),
				mark("⟨U+200C⟩", "zero-width non-joiner"), mark("⟨U+200D⟩", "zero-width joiner")}},
		{"SoftHyphenAndSeparators", "a\u00adb\u2028c\u2029\u180e", MultiLine,
			[]VisibleRun{plain("a"), mark("⟨U+00AD⟩", "soft hyphen"), plain("b"), mark("⟨U+2028⟩", "line separator"), plain("c"),
				mark("⟨U+2029⟩", "paragraph separator"), mark("⟨U+180E⟩", "Mongolian vowel separator")}},
		{"VariationSelectorsAndTags", "x\ufe0f\U000E0100\U000E0041\U000E007F", SingleLine,
			[]VisibleRun{plain("x"), mark("⟨U+FE0F⟩", "variation selector"), mark("⟨U+E0100⟩", "variation selector"),
				mark("⟨U+E0041⟩", "tag character"), mark("⟨U+E007F⟩", "tag character")}},
		{"OtherFormatCharacter", "a\u2062b", SingleLine,
			[]VisibleRun{plain("a"), mark("⟨U+2062⟩", "invisible format character"), plain("b")}},
		{"Fillers", "\u3164\u115f", SingleLine,
			[]VisibleRun{mark("⟨U+3164⟩", "Hangul filler"), mark("⟨U+115F⟩", "Hangul choseong filler")}},
		{"InvalidByte", "a\xffb", SingleLine, []VisibleRun{plain("a"), mark("⟨0xFF⟩", "invalid byte"), plain("b")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Visible(tt.in, tt.kind)
			if !reflect.DeepEqual(got.Runs, tt.want) {
				t.Fatalf("runs\n got %+v\nwant %+v", got.Runs, tt.want)
			}
			hidden := false
			for _, r := range tt.want {
				hidden = hidden || r.Hidden
			}
			if got.Hidden != hidden || HasHidden(tt.in, tt.kind) != hidden {
				t.Fatalf("hidden: Visible %v, HasHidden %v, want %v", got.Hidden, HasHidden(tt.in, tt.kind), hidden)
			}
		})
	}
}

func TestVisibleString(t *testing.T) {
	if got := Visible("invoice_4471_\u202Efdp.exe", SingleLine).String(); got != "invoice_4471_⟨U+202E⟩fdp.exe" {
		t.Fatal(got)
	}
	if got := Visible("plain", SingleLine).String(); got != "plain" {
		t.Fatal(got)
	}
}
