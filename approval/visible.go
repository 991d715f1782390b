package approval

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TextKind says how a piece of untrusted text is read, which decides
// whether a line feed in it is a line break or a hidden character.
type TextKind int

const (
	// SingleLine is a name, an id or an argument key: it has no lines, so a
	// line feed in it is marked like any other control character.
	SingleLine TextKind = iota
	// MultiLine is an argument value or a reason: a line feed is kept as a
	// line break (shown as one), while a carriage return is still marked,
	// because transports and pages treat a lone CR inconsistently.
	MultiLine
)

// VisibleRun is a stretch of untrusted text: either plain text to be shown
// (escaped) as it is, or one hidden character replaced by its marker.
type VisibleRun struct {
	Text   string // the plain text, or the marker such as "⟨U+202E⟩"
	Hidden bool   // Text is a marker standing for a character that would not show
	Name   string // for a marker: what the character is, in words
}

// VisibleText is untrusted text split into runs, ready to be shown so that
// nothing in it is invisible or changes the direction of what follows.
type VisibleText struct {
	Runs   []VisibleRun
	Hidden bool // at least one run is a marker
}

// String is the text with every hidden character replaced by its marker,
// for places that take plain text only (attributes, CSV, titles).
func (v VisibleText) String() string {
	var b strings.Builder
	for _, r := range v.Runs {
		b.WriteString(r.Text)
	}
	return b.String()
}

// Visible splits untrusted text into plain runs and markers for the
// characters a reader would not see or that reorder the text: bidi
// controls, zero-width and other format characters, C0 and C1 controls
// (tab excepted; line feed only in MultiLine text), line and paragraph
// separators, variation selectors, tag characters and invisible fillers.
// Invalid UTF-8 bytes are marked as well.
func Visible(s string, kind TextKind) VisibleText {
	var v VisibleText
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var name string
		var hidden bool
		if r == utf8.RuneError && size == 1 {
			name, hidden = "invalid byte", true
		} else {
			name, hidden = HiddenRune(r, kind)
		}
		if !hidden {
			i += size
			continue
		}
		if start < i {
			v.Runs = append(v.Runs, VisibleRun{Text: s[start:i]})
		}
		marker := fmt.Sprintf("⟨U+%04X⟩", r)
		if r == utf8.RuneError && size == 1 {
			marker = fmt.Sprintf("⟨0x%02X⟩", s[i])
		}
		v.Runs = append(v.Runs, VisibleRun{Text: marker, Hidden: true, Name: name})
		v.Hidden = true
		i += size
		start = i
	}
	if start < len(s) {
		v.Runs = append(v.Runs, VisibleRun{Text: s[start:]})
	}
	return v
}

// HasHidden reports whether s holds any character Visible would mark.
func HasHidden(s string, kind TextKind) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return true
		}
		if _, hidden := HiddenRune(r, kind); hidden {
			return true
		}
		i += size
	}
	return false
}

// HiddenRune reports whether r must be shown as a marker in text of the
// given kind, and names it.
func HiddenRune(r rune, kind TextKind) (string, bool) {
	if name, ok := hiddenNames[r]; ok {
		if r == '\n' && kind == MultiLine {
			return "", false
		}
		return name, true
	}
	switch {
	case r == '\t':
		return "", false
	case r < 0x20, r == 0x7F:
		return "control character", true
	case r >= 0x80 && r <= 0x9F:
		return "C1 control character", true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF:
		return "variation selector", true
	case r >= 0xE0000 && r <= 0xE007F:
		return "tag character", true
	case unicode.Is(unicode.Cf, r):
		return "invisible format character", true
	}
	return "", false
}

// hiddenNames names the characters most often used to hide or reorder
// text; others are named by their class in HiddenRune.
var hiddenNames = map[rune]string{
	'\n':   "line feed",
	'\r':   "carriage return",
	0x00:   "null",
	0x1B:   "escape",
	0x85:   "next line",
	0xAD:   "soft hyphen",
	0x034F: "combining grapheme joiner",
	0x061C: "Arabic letter mark",
	0x115F: "Hangul choseong filler",
	0x1160: "Hangul jungseong filler",
	0x17B4: "Khmer vowel inherent aq",
	0x17B5: "Khmer vowel inherent aa",
	0x180E: "Mongolian vowel separator",
	0x200B: "zero-width space",
	0x200C: "zero-width non-joiner",
	0x200D: "zero-width joiner",
	0x200E: "left-to-right mark",
	0x200F: "right-to-left mark",
	0x2028: "line separator",
	0x2029: "paragraph separator",
	0x202A: "left-to-right embedding",
	0x202B: "right-to-left embedding",
	0x202C: "pop directional formatting",
	0x202D: "left-to-right override",
	0x202E: "right-to-left override",
	0x2060: "word joiner",
	0x2066: "left-to-right isolate",
	0x2067: "right-to-left isolate",
	0x2068: "first strong isolate",
	0x2069: "pop directional isolate",
	0x3164: "Hangul filler",
	0xFEFF: "zero-width no-break space",
	0xFFA0: "halfwidth Hangul filler",
}

// NonASCIISpace reports whether r is a space other than the ASCII one
// (no-break, en, em, thin, ideographic and the like): it reads as a space
// but is not one, so a name holding it passes for another.
func NonASCIISpace(r rune) bool {
	return r != ' ' && unicode.Is(unicode.Zs, r)
}
