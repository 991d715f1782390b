package approval

import (
	"strings"
	"testing"
)

// A team's name refuses every hidden character the card would mark
// (HasHidden: controls, bidi, zero-width) and non-ASCII spaces, naming the
// character; letters of any script are fine.
func TestValidTeamNameHidden(t *testing.T) {
	for name, want := range map[string]string{
		"finance":           "",
		"équipe-Zürich":     "",
		"財務":                "",
		"plat form":         "",
		"fin\u200bance":     "U+200B",
		"fin\u200dance":     "U+200D",
		"fin\u202eecnanif":  "U+202E",
		"fin\u2066ance":     "U+2066",
		"fin\ufeffance":     "U+FEFF",
		"fin\u00a0ance":     "U+00A0",
		"fin\u2007ance":     "U+2007",
		"fin\u3000ance":     "U+3000",
		"fin\u0085ance":     "control",
		"fin\u00adance":     "U+00AD",
		"fin\U000E0041ance": "U+E0041",
		"fin\u034fance":     "U+034F",
		"fin\u2028ance":     "U+2028",
		"finance\x1b[31m":   "control",
	} {
		err := ValidTeamName(name)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q refused: %v", name, err)
		case want != "" && (err == nil || !strings.Contains(AsError(err).Message, want)):
			t.Errorf("%q: %v, want refused naming %s", name, err, want)
		}
	}
}
