package approval

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Preview limits. Values are folded on the server, before they reach a
// page or the database. Nothing that runs is hidden by default: a value is
// kept whole up to PreviewWholeChars, and the values of one call together
// up to PreviewCardChars; beyond that a value keeps its beginning and its
// end (the end of a command is often the dangerous part) and only its
// middle is folded.
const (
	PreviewWholeChars = 4096  // a value up to this many characters is kept whole
	PreviewCardChars  = 16384 // characters kept of all the values of one call
	PreviewFoldChars  = 160   // the least a folded value keeps, beginning and end together
	PreviewKeyChars   = 80    // characters kept of a long key
	PreviewMaxLines   = 100   // keys shown; the rest are counted
	PreviewURLPath    = 1000  // a URL's scheme+host+path longer than this is folded like text
)

// PreviewLine is one argument key and its value, whole or folded.
type PreviewLine struct {
	Key   string `json:"key"`
	Value string `json:"value"` // the whole value, or its beginning when Shortened
	// Tail is the end of a folded value: what lies between Value and Tail
	// is not kept. A preview stored before values were folded has
	// Shortened set and no Tail: it kept the beginning only.
	Tail      string `json:"tail,omitempty"`
	Length    int    `json:"length"`    // characters in the full value
	Shortened bool   `json:"shortened"` // Value (and Tail) leave part of it out
	// Hidden is set when the full key or value — not only the part kept —
	// holds characters a reader cannot see (see Visible), so the card warns
	// even when they sit beyond the cut.
	Hidden bool `json:"hidden,omitempty"`
	// KeyShortened is set when the key is longer than PreviewKeyChars: Key
	// is its beginning and KeyLength its length, so that two keys differing
	// only past the cut are never shown as the same key.
	KeyShortened bool `json:"key_shortened,omitempty"`
	KeyLength    int  `json:"key_length,omitempty"`
}

// ArgumentPreview is what a reviewer sees of the arguments: one line per
// top-level key in the order sent, or the shortened raw text when the
// arguments could not be parsed.
type ArgumentPreview struct {
	Parsed bool `json:"parsed"`
	// Scope is what "Always allow calls like this" proposes for the call,
	// when it is offered.
	Scope    *ScopeProposal `json:"scope,omitempty"`
	Lines    []PreviewLine  `json:"lines,omitempty"`
	MoreKeys int            `json:"more_keys,omitempty"`
	// MoreHidden is set when a key beyond the shown lines, or its value,
	// holds hidden characters.
	MoreHidden bool `json:"more_hidden,omitempty"`
	// MoreDestinations names the keys beyond the shown lines that usually
	// say where data goes (bcc, url…), shortened like a key.
	MoreDestinations []string `json:"more_destinations,omitempty"`
	// Destinations lists what each destination-like argument names, every
	// item of it, read from the whole value (see checkWhole).
	Destinations []Destination `json:"destinations,omitempty"`
	// LookAlike lists every host name with look-alike characters found in
	// any destination-like value read in full, shown or not.
	LookAlike    []HostCheck `json:"look_alike,omitempty"`
	Raw          string      `json:"raw,omitempty"`
	RawTail      string      `json:"raw_tail,omitempty"` // the end of folded raw text (see PreviewLine.Tail)
	RawLength    int         `json:"raw_length,omitempty"`
	RawShortened bool        `json:"raw_shortened,omitempty"`
	RawHidden    bool        `json:"raw_hidden,omitempty"` // the full raw text holds hidden characters
	Problem      string      `json:"problem,omitempty"`
	// Removed is set when the preview was deleted after the retention period.
	Removed bool `json:"removed,omitempty"`
	// Shell is the shell command parsed whole, for a tool naming its shell argument.
	Shell *ShellView `json:"shell,omitempty"`
}

// KeyNote is the words shown with a shortened key.
func KeyNote(length int) string {
	return "(key of " + strconv.Itoa(length) + " characters, shown in part)"
}

// ShortNote is the words shown under a value stored, before values were
// folded, with its beginning only: it says the end is not shown.
func ShortNote(kept, length int) string {
	return "(showing the first " + strconv.Itoa(kept) + " of " + strconv.Itoa(length) + " characters; the end is not shown)"
}

// FoldNote is the words in the fold of a value that keeps its beginning
// and end.
func FoldNote(hidden int) string {
	if hidden == 1 {
		return "1 character hidden"
	}
	return strconv.Itoa(hidden) + " characters hidden"
}

// Folded reports whether the line keeps the value's beginning and end with
// the middle left out.
func (l PreviewLine) Folded() bool { return l.Shortened && l.Tail != "" }

// Left is how many characters of the value the line leaves out.
func (l PreviewLine) Left() int {
	return max(l.Length-utf8.RuneCountInString(l.Value)-utf8.RuneCountInString(l.Tail), 0)
}

// RawLeft is how many characters of the raw text the preview leaves out.
func (p ArgumentPreview) RawLeft() int {
	return max(p.RawLength-utf8.RuneCountInString(p.Raw)-utf8.RuneCountInString(p.RawTail), 0)
}

// Preview builds the reviewer's view of a.
func Preview(a Arguments) ArgumentPreview {
	if !a.Parsed {
		head, tail, n, short := fold(printable(a.Raw), PreviewWholeChars)
		return ArgumentPreview{Raw: head, RawTail: tail, RawLength: n, RawShortened: short, Problem: a.Problem,
			RawHidden: HasHidden(a.Raw, MultiLine)}
	}
	p := ArgumentPreview{Parsed: true, Lines: make([]PreviewLine, 0, min(len(a.Members), PreviewMaxLines))}
	shown := a.Members[:min(len(a.Members), PreviewMaxLines)]
	texts := make([]string, len(shown))
	lengths := make([]int, len(shown))
	for i, m := range shown {
		texts[i] = printable(valueText(m.Value))
		lengths[i] = utf8.RuneCountInString(texts[i])
	}
	keep := allowances(lengths)
	for i, m := range shown {
		key, keyLen, keyShort := shorten(m.Key, PreviewKeyChars)
		head, tail, n, short := foldValue(texts[i], keep[i])
		hidden := HasHidden(m.Key, SingleLine) || HasHidden(texts[i], MultiLine)
		line := PreviewLine{Key: key, Value: head, Tail: tail, Length: n, Shortened: short, Hidden: hidden}
		if keyShort {
			line.KeyShortened, line.KeyLength = true, keyLen
		}
		p.Lines = append(p.Lines, line)
	}
	if len(a.Members) > PreviewMaxLines {
		p.MoreKeys = len(a.Members) - PreviewMaxLines
	}
	checkWhole(&p, a.Members)
	return p
}

// allowances is how many characters of each value are kept: each whole up
// to PreviewWholeChars; when together they pass PreviewCardChars, the
// longest are folded first, all down to one level (never below
// PreviewFoldChars), so that short values stay whole.
func allowances(lengths []int) []int {
	out := make([]int, len(lengths))
	total := 0
	for i, n := range lengths {
		out[i] = min(n, PreviewWholeChars)
		total += out[i]
	}
	if total <= PreviewCardChars {
		return out
	}
	sum := func(level int) int {
		t := 0
		for _, n := range out {
			t += min(n, level)
		}
		return t
	}
	// The highest level whose sum fits: sum grows with the level.
	lo, hi := PreviewFoldChars, PreviewWholeChars
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if sum(mid) <= PreviewCardChars {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for i := range out {
		out[i] = min(out[i], lo)
	}
	return out
}

// valueText renders a JSON value for people: strings as their text,
// scalars as written, objects and arrays as compact JSON.
func valueText(v jsontext.Value) string {
	switch v.Kind() {
	case '"':
		var s string
		dec := jsontext.NewDecoder(strings.NewReader(string(v)))
		if tok, err := dec.ReadToken(); err == nil {
			s = tok.String()
		}
		return s
	case '{', '[':
		c := v.Clone()
		if err := c.Compact(); err == nil {
			return string(c)
		}
	}
	return string(v)
}

// foldValue keeps a value whole when it has at most keep characters; else
// its beginning and its end, with the middle left out. A URL's scheme,
// host and path stay whole in the beginning (unless the path itself is
// very long).
func foldValue(s string, keep int) (head, tail string, n int, folded bool) {
	tailN := max(keep/4, 1)
	headN := keep - tailN
	if h, _, ok := splitURL(s); ok {
		if hn := utf8.RuneCountInString(h); hn <= PreviewURLPath {
			headN = max(headN, hn+24)
		}
	}
	return cut(s, headN, tailN)
}

// fold keeps s whole when it has at most keep characters; else its first
// three quarters of keep and its last quarter. s is already printable.
func fold(s string, keep int) (head, tail string, n int, folded bool) {
	tailN := max(keep/4, 1)
	return cut(s, keep-tailN, tailN)
}

// cut keeps s whole when it has at most headN+tailN characters; else its
// first headN and last tailN characters.
func cut(s string, headN, tailN int) (head, tail string, n int, folded bool) {
	n = utf8.RuneCountInString(s)
	if n <= headN+tailN {
		return s, "", n, false
	}
	r := []rune(s)
	return string(r[:headN]), string(r[n-tailN:]), n, true
}

// splitURL splits an absolute http(s) URL into scheme+host+path and the
// rest (query and fragment).
func splitURL(s string) (head, tail string, ok bool) {
	if strings.ContainsAny(s, " \t\r\n") {
		return "", "", false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", false
	}
	i := strings.IndexAny(s, "?#")
	if i < 0 {
		return s, "", true
	}
	return s[:i], s[i:], true
}

// shorten keeps the first limit characters of s.
func shorten(s string, limit int) (string, int, bool) {
	s = printable(s)
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s, n, false
	}
	i, count := 0, 0
	for i < len(s) && count < limit {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i], n, true
}

// printable makes text safe to store and show: invalid UTF-8 and NUL (which
// Postgres text cannot hold) become visible replacement characters.
func printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\u2400")
}

// FullValue is a value's whole text as a reviewer reads it when they expand
// a shortened line: the preview's rendering without the cut.
func FullValue(v jsontext.Value) string { return printable(valueText(v)) }

// FullText is text made safe to show whole (see printable).
func FullText(s string) string { return printable(s) }
