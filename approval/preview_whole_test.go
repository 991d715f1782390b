package approval

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// manyKeys is an object of n harmless keys followed by extra members.
func manyKeys(n int, extra string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"note%d":"x",`, i)
	}
	return b.String() + extra + "}"
}

// Keys beyond the shown lines are still checked: hidden characters, and
// look-alike hosts in a destination such as bcc, which is named as well.
func TestPreviewChecksKeysNotShown(t *testing.T) {
	p := Preview(ParseArguments(manyKeys(120, `"bcc":"exfil@pаypal.com","cmd\u202e":"rm -rf /\u200b"`)))
	if p.MoreKeys != 22 || len(p.Lines) != PreviewMaxLines {
		t.Fatalf("more %d lines %d", p.MoreKeys, len(p.Lines))
	}
	if !p.MoreHidden {
		t.Error("hidden characters beyond the shown lines not reported")
	}
	if len(p.LookAlike) != 1 || p.LookAlike[0].Host != "pаypal.com" || !strings.HasPrefix(p.LookAlike[0].ASCII, "xn--") {
		t.Errorf("look-alike: %+v", p.LookAlike)
	}
	if len(p.MoreDestinations) != 1 || p.MoreDestinations[0] != "bcc" {
		t.Errorf("destinations not shown: %v", p.MoreDestinations)
	}
	clean := Preview(ParseArguments(manyKeys(120, `"bcc":"a@paypal.com"`)))
	if clean.MoreHidden || len(clean.LookAlike) != 0 {
		t.Errorf("false alarm: %+v %+v", clean.MoreHidden, clean.LookAlike)
	}
}

// A destination's look-alike host is found in the whole value, also past
// the part kept: a long list of addresses, as text or as a JSON array.
func TestPreviewLookAlikeBeyondCut(t *testing.T) {
	addrs := make([]string, 120)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("user%d@acme.example", i)
	}
	text := `{"to":"` + strings.Join(addrs, ", ") + `, ceo@pаypal.com"}`
	array := `{"to":["` + strings.Join(addrs[:100], `","`) + `","ceo@pаypal.com"]}`
	for name, args := range map[string]string{"text": text, "array": array} {
		p := Preview(ParseArguments(args))
		if !p.Lines[0].Shortened {
			t.Fatal(name, "not shortened")
		}
		if strings.Contains(p.Lines[0].Value, "pаypal") {
			t.Fatal(name, "the look-alike is in the shown part")
		}
		if len(p.LookAlike) != 1 || p.LookAlike[0].Host != "pаypal.com" {
			t.Errorf("%s: look-alike %+v", name, p.LookAlike)
		}
	}
}

// A key longer than the preview keeps is marked as shortened, with its
// length, so two keys differing only past the cut are told apart.
func TestPreviewMarksLongKeys(t *testing.T) {
	base := strings.Repeat("k", 90)
	p := Preview(ParseArguments(`{"` + base + `_NOT":"5","` + base + `_YES":"500000","short":"1"}`))
	for _, l := range p.Lines[:2] {
		if !l.KeyShortened || l.KeyLength != 94 || utf8.RuneCountInString(l.Key) != PreviewKeyChars {
			t.Errorf("long key: %+v", l)
		}
	}
	if p.Lines[2].KeyShortened || p.Lines[2].KeyLength != 0 {
		t.Errorf("short key marked: %+v", p.Lines[2])
	}
	if KeyNote(94) != "(key of 94 characters, shown in part)" {
		t.Error(KeyNote(94))
	}
}
