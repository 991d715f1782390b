package views

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/a-h/templ"

	"github.com/countersign/countersign/approval"
)

// Value kinds: how an argument value is laid out for reading. Each shows
// the value's own text (escaped, with hidden characters as markers); only
// the layout differs.
const (
	valuePlain     = "plain"
	valueURL       = "url"
	valueList      = "list"      // an array of strings: one item per line
	valueStructure = "structure" // an object or another array: pretty-printed, collapsible
	valueProse     = "prose"     // text with line breaks
	valueTime      = "time"      // an RFC 3339 timestamp
)

// ValueView is an argument value laid out for reading.
type ValueView struct {
	Kind   string
	Text   string   // plain, prose, time (the raw value), structure (pretty-printed)
	Items  []string // list
	Origin string   // url: scheme and host
	Path   string   // url: the path
	Rest   string   // url: query and fragment
	Time   time.Time
	Count  int // list and structure: items or keys
}

// ViewValue lays out a value as the preview (or the full text) has it. A
// shortened value is shown as text: its cut-off JSON is not a structure.
func ViewValue(s string, shortened bool) ValueView {
	if head, rest, ok := splitURLValue(s); ok {
		u, _ := url.Parse(head)
		origin := u.Scheme + "://" + u.Host
		return ValueView{Kind: valueURL, Origin: origin, Path: strings.TrimPrefix(head, origin), Rest: rest}
	}
	if !shortened && len(s) > 1 && (s[0] == '[' || s[0] == '{') && json.Valid([]byte(s)) {
		var items []string
		if s[0] == '[' && json.Unmarshal([]byte(s), &items) == nil && len(items) > 0 {
			return ValueView{Kind: valueList, Items: items, Count: len(items)}
		}
		var buf bytes.Buffer
		if json.Indent(&buf, []byte(s), "", "  ") == nil {
			return ValueView{Kind: valueStructure, Text: buf.String(), Count: topCount(s)}
		}
	}
	if !shortened && len(s) >= 20 && len(s) <= 40 {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return ValueView{Kind: valueTime, Text: s, Time: t}
		}
	}
	if strings.Contains(s, "\n") {
		return ValueView{Kind: valueProse, Text: s}
	}
	return ValueView{Kind: valuePlain, Text: s}
}

// splitURLValue splits a whole http(s) URL into scheme+host+path and the
// rest.
func splitURLValue(s string) (string, string, bool) {
	if strings.ContainsAny(s, " \t\r\n") {
		return "", "", false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", false
	}
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		return s[:i], s[i:], true
	}
	return s, "", true
}

// topCount is the number of keys or items at the top of a JSON object or
// array.
func topCount(s string) int {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return 0
	}
	switch x := v.(type) {
	case map[string]any:
		return len(x)
	case []any:
		return len(x)
	}
	return 0
}

// structureSummary says what a collapsed structure holds.
func structureSummary(v ValueView) string {
	if strings.HasPrefix(v.Text, "[") {
		return plural(v.Count, "item")
	}
	return plural(v.Count, "key")
}

// Recipients lists everything a call sends to or writes, each item on its
// own: every address in to, cc and bcc, every host, every path.
func Recipients(p approval.ArgumentPreview) []string {
	var out []string
	for _, d := range Touches(p) {
		out = append(out, d.Items...)
	}
	return out
}

// UntrustedValue is UntrustedText for an argument value read as tokens:
// each run of text between white space is kept on one line where it fits
// (so that "bash -s -- --yes" never breaks inside "--"), and a token
// longer than a line still wraps within itself. Hidden characters are
// markers inside their token.
func UntrustedValue(s string) templ.Component {
	v := approval.Visible(s, approval.MultiLine)
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		var b strings.Builder
		b.WriteString(`<bdi class="untrusted">`)
		open := false
		start := func() {
			if !open {
				b.WriteString(`<span class="tok">`)
				open = true
			}
		}
		stop := func() {
			if open {
				b.WriteString(`</span>`)
				open = false
			}
		}
		for _, r := range v.Runs {
			if r.Hidden {
				start()
				b.WriteString(`<span class="hidden-char" title="`)
				b.WriteString(templ.EscapeString("Hidden character: " + r.Name))
				b.WriteString(`">`)
				b.WriteString(templ.EscapeString(r.Text))
				b.WriteString(`</span>`)
				continue
			}
			for len(r.Text) > 0 {
				i := strings.IndexFunc(r.Text, unicode.IsSpace)
				if i != 0 {
					if i < 0 {
						i = len(r.Text)
					}
					start()
					b.WriteString(templ.EscapeString(r.Text[:i]))
					r.Text = r.Text[i:]
					continue
				}
				j := strings.IndexFunc(r.Text, func(c rune) bool { return !unicode.IsSpace(c) })
				if j < 0 {
					j = len(r.Text)
				}
				stop()
				b.WriteString(templ.EscapeString(r.Text[:j]))
				r.Text = r.Text[j:]
			}
		}
		stop()
		b.WriteString(`</bdi>`)
		_, err := io.WriteString(w, b.String())
		return err
	})
}

// FullValueView is one argument value as its owner expanded it.
type FullValueView struct {
	Page      Page
	ID        string
	Key       string
	Value     string
	Length    int
	Available bool // false: the request no longer waits, the full text is gone
	// LookAlike lists the look-alike host names in the value read in full.
	LookAlike []approval.HostCheck
}
