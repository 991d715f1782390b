package approval

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Preview limits. Values are shortened on the server, before they reach a
// page or the database.
const (
	PreviewValueChars = 240  // characters kept of a long value
	PreviewKeyChars   = 80   // characters kept of a long key
	PreviewMaxLines   = 100  // keys shown; the rest are counted
	PreviewURLPath    = 1000 // a URL's scheme+host+path longer than this is shortened like text
)

// PreviewLine is one argument key and its shortened value.
type PreviewLine struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	Length    int    `json:"length"`    // characters in the full value
	Shortened bool   `json:"shortened"` // Value is the beginning of it
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
	Parsed   bool          `json:"parsed"`
	Lines    []PreviewLine `json:"lines,omitempty"`
	MoreKeys int           `json:"more_keys,omitempty"`
	// MoreHidden is set when a key beyond the shown lines, or its value,
	// holds hidden characters.
	MoreHidden bool `json:"more_hidden,omitempty"`
	// MoreDestinations names the keys beyond the shown lines that usually
	// say where data goes (bcc, url…), shortened like a key.
	MoreDestinations []string `json:"more_destinations,omitempty"`
	// LookAlike lists every host name with look-alike characters found in
	// any destination-like value read in full, shown or not.
	LookAlike    []HostCheck `json:"look_alike,omitempty"`
	Raw          string      `json:"raw,omitempty"`
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

// ShortNote is the words shown under a shortened value.
func ShortNote(length int) string {
	return "(showing part of " + strconv.Itoa(length) + " characters)"
}

// Preview builds the reviewer's view of a.
func Preview(a Arguments) ArgumentPreview {
	if !a.Parsed {
		raw, n, short := shorten(a.Raw, PreviewValueChars)
		return ArgumentPreview{Raw: raw, RawLength: n, RawShortened: short, Problem: a.Problem,
			RawHidden: HasHidden(a.Raw, MultiLine)}
	}
	p := ArgumentPreview{Parsed: true, Lines: make([]PreviewLine, 0, min(len(a.Members), PreviewMaxLines))}
	for i, m := range a.Members {
		if i == PreviewMaxLines {
			p.MoreKeys = len(a.Members) - PreviewMaxLines
			break
		}
		key, keyLen, keyShort := shorten(m.Key, PreviewKeyChars)
		full := valueText(m.Value)
		val, n, short := shortenValue(full)
		hidden := HasHidden(m.Key, SingleLine) || HasHidden(full, MultiLine)
		line := PreviewLine{Key: key, Value: val, Length: n, Shortened: short, Hidden: hidden}
		if keyShort {
			line.KeyShortened, line.KeyLength = true, keyLen
		}
		p.Lines = append(p.Lines, line)
	}
	checkWhole(&p, a.Members)
	return p
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

// shortenValue keeps a URL's scheme, host and path whole and shortens only
// its query and fragment; anything else keeps its beginning.
func shortenValue(s string) (string, int, bool) {
	s = printable(s)
	n := utf8.RuneCountInString(s)
	if n <= PreviewValueChars {
		return s, n, false
	}
	if head, tail, ok := splitURL(s); ok && utf8.RuneCountInString(head) <= PreviewURLPath {
		room := max(PreviewValueChars-utf8.RuneCountInString(head), 24)
		t, _, _ := shorten(tail, room)
		return head + t, n, true
	}
	out, _, short := shorten(s, PreviewValueChars)
	return out, n, short
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
