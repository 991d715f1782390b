package views

import (
	"context"
	"io"
	"strings"

	"github.com/a-h/templ"
	"github.com/countersign/countersign/approval"
)

// Untrusted shows a name, an id or an argument key that came from a
// runtime or a model: escaped, direction-isolated in a <bdi> so it cannot
// reorder its neighbours, and with every hidden or direction-changing
// character (a line feed included) shown as a marker such as ⟨U+202E⟩.
// Every place that shows such text uses it.
func Untrusted(s string) templ.Component {
	return untrusted(approval.Visible(s, approval.SingleLine))
}

// UntrustedText is Untrusted for text that may have lines (argument values,
// reasons): a line feed stays a line break, a carriage return is marked.
func UntrustedText(s string) templ.Component {
	return untrusted(approval.Visible(s, approval.MultiLine))
}

// Marked is untrusted text with its hidden characters as markers, for
// places that take plain text only (attributes such as aria-label).
func Marked(s string) string {
	return approval.Visible(s, approval.SingleLine).String()
}

func untrusted(v approval.VisibleText) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		var b strings.Builder
		b.WriteString(`<bdi class="untrusted">`)
		for _, r := range v.Runs {
			if !r.Hidden {
				b.WriteString(templ.EscapeString(r.Text))
				continue
			}
			b.WriteString(`<span class="hidden-char" title="`)
			b.WriteString(templ.EscapeString("Hidden character: " + r.Name))
			b.WriteString(`">`)
			b.WriteString(templ.EscapeString(r.Text))
			b.WriteString(`</span>`)
		}
		b.WriteString(`</bdi>`)
		_, err := io.WriteString(w, b.String())
		return err
	})
}

// hasHidden reports whether any of the single-line texts holds a
// character that is shown as a marker.
func hasHidden(single ...string) bool {
	for _, s := range single {
		if approval.HasHidden(s, approval.SingleLine) {
			return true
		}
	}
	return false
}
