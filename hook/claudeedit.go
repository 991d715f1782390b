package hook

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

type editArgs struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// applyEdits applies Claude Code's edits to the file's text as Claude Code
// 2.1.328 does, so that the card shows what lands: an old_string not in
// the file is looked for with curly quotes read as straight ones (and
// \uXXXX escapes read as their characters), and new_string then takes the
// file's quote style; an empty new_string that removes a whole line's text
// removes its line break too; a CRLF file is edited as LF and written back
// with CRLF. False when an edit does not apply (Claude Code then fails the
// call): not found, found more than once without replace_all, or nothing
// changes.
func applyEdits(text string, edits []editArgs, path string, b *budget) (string, bool) {
	crlf := strings.Count(text, "\r\n") > strings.Count(text, "\n")/2
	s := text
	if crlf {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	var added []string
	for _, e := range edits {
		b.spend(len(s) + len(e.OldString) + len(e.NewString))
		if e.OldString == "" {
			if strings.TrimSpace(s) != "" {
				return "", false // Claude Code: the file already exists
			}
			s = e.NewString
			continue
		}
		for _, n := range added {
			if l := strings.TrimRight(e.OldString, "\n"); l != "" && strings.Contains(n, l) {
				return "", false // an old_string inside an earlier edit's new_string
			}
		}
		actual, ok := findActual(s, e.OldString)
		if !ok || (!e.ReplaceAll && strings.Count(s, actual) > 1) {
			return "", false
		}
		next := quoteStyle(e.OldString, actual, e.NewString)
		if actual != e.OldString && escapes.MatchString(e.OldString) && unescape(e.OldString) == actual {
			next = unescape(e.NewString)
		}
		if next == "" && !strings.HasSuffix(actual, "\n") && strings.Contains(s, actual+"\n") {
			actual += "\n"
		}
		before := s
		if e.ReplaceAll {
			b.spend(len(s) + strings.Count(s, actual)*len(next))
			s = strings.ReplaceAll(s, actual, next)
		} else {
			s = strings.Replace(s, actual, next, 1)
		}
		if s == before {
			return "", false
		}
		added = append(added, e.NewString)
	}
	if crlf {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	if s == text {
		return "", false
	}
	return s, true
}

// Claude Code's curly quotes.
const (
	leftSingle  = '\u2018'
	rightSingle = '\u2019'
	leftDouble  = '\u201C'
	rightDouble = '\u201D'
)

// straightQuotes reads curly quotes as straight ones, rune for rune.
func straightQuotes(r rune) rune {
	switch r {
	case leftSingle, rightSingle:
		return '\''
	case leftDouble, rightDouble:
		return '"'
	}
	return r
}

var (
	escapes       = regexp.MustCompile(`\\u[0-9a-fA-F]{4}`)
	escapesOrPair = regexp.MustCompile(`(\\\\)|\\u([0-9a-fA-F]{4})`)
)

// unescape reads \uXXXX escapes as their characters (an escaped
// backslash stays as written).
func unescape(s string) string {
	return escapesOrPair.ReplaceAllStringFunc(s, func(m string) string {
		if m == `\\` {
			return m
		}
		n, _ := strconv.ParseUint(m[2:], 16, 16)
		return string(rune(n))
	})
}

// findActual is the text in s that old stands for: old itself, else the
// same text with curly quotes read as straight, else old with its escapes
// read.
func findActual(s, old string) (string, bool) {
	if strings.Contains(s, old) {
		return old, true
	}
	rs, ro := []rune(s), []rune(old)
	ns := []rune(strings.Map(straightQuotes, s))
	no := string([]rune(strings.Map(straightQuotes, old)))
	if i := strings.Index(string(ns), no); i >= 0 {
		at := len([]rune(string(ns)[:i]))
		if at+len(ro) <= len(rs) {
			return string(rs[at : at+len(ro)]), true
		}
	}
	if escapes.MatchString(old) {
		if u := unescape(old); u != old && strings.Contains(s, u) {
			return u, true
		}
	}
	return "", false
}

// quoteStyle gives next the curly quotes of the file's text when old was
// found only with its quotes read as straight.
func quoteStyle(old, actual, next string) string {
	if old == actual {
		return next
	}
	double := strings.ContainsRune(actual, leftDouble) || strings.ContainsRune(actual, rightDouble)
	single := strings.ContainsRune(actual, leftSingle) || strings.ContainsRune(actual, rightSingle)
	rs := []rune(next)
	out := make([]rune, len(rs))
	for i, r := range rs {
		out[i] = r
		switch {
		case double && r == '"':
			out[i] = rightDouble
			if opens(rs, i) {
				out[i] = leftDouble
			}
		case single && r == '\'':
			out[i] = rightSingle
			between := i > 0 && i < len(rs)-1 && unicode.IsLetter(rs[i-1]) && unicode.IsLetter(rs[i+1])
			if !between && opens(rs, i) {
				out[i] = leftSingle
			}
		}
	}
	return string(out)
}

// opens reports a quote that opens: at the start, or after a space, a line
// break or an opening bracket or dash.
func opens(rs []rune, i int) bool {
	return i == 0 || strings.ContainsRune(" \t\n\r([{\u2014\u2013", rs[i-1])
}
