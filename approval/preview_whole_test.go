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
// the part kept: a long list of addresses, as text or as a JSON array,
// and the risk line names every recipient, the folded ones too.
func TestPreviewLookAlikeBeyondCut(t *testing.T) {
	addrs := make([]string, 400)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("user%d@acme.example", i)
	}
	text := `{"to":"` + strings.Join(addrs[:200], ", ") + `, ceo@pаypal.com, ` + strings.Join(addrs[200:], ", ") + `"}`
	array := `{"to":["` + strings.Join(addrs[:200], `","`) + `","ceo@pаypal.com","` + strings.Join(addrs[200:], `","`) + `"]}`
	for name, args := range map[string]string{"text": text, "array": array} {
		p := Preview(ParseArguments(args))
		if !p.Lines[0].Shortened {
			t.Fatal(name, "not shortened")
		}
		if strings.Contains(p.Lines[0].Value+p.Lines[0].Tail, "pаypal") {
			t.Fatal(name, "the look-alike is in the shown part")
		}
		if len(p.LookAlike) != 1 || p.LookAlike[0].Host != "pаypal.com" {
			t.Errorf("%s: look-alike %+v", name, p.LookAlike)
		}
		if len(p.Destinations) != 1 || len(p.Destinations[0].Items) != PreviewDestinationItems || p.Destinations[0].More != 201 ||
			p.Destinations[0].Items[200-1] != "user199@acme.example" {
			t.Errorf("%s: destinations %d items, %d more", name, len(p.Destinations[0].Items), p.Destinations[0].More)
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

// Every recipient of a mail is named, in to, cc and bcc, each address on
// its own; a URL by its host; a path whole.
func TestPreviewDestinations(t *testing.T) {
	p := Preview(ParseArguments(`{"to":"ann@acme.example, Bob <bob@acme.example>","subject":"Q3","cc":["carol@acme.example"],` +
		`"bcc":"drop@elsewhere.example","body":"hi","url":"https://api.example.com/v1/x?y=1","path":"/srv/app/data/x.db","note":"n@x.example"}`))
	want := []Destination{
		{Key: "to", Items: []string{"ann@acme.example", `"Bob" <bob@acme.example>`}},
		{Key: "cc", Items: []string{"carol@acme.example"}},
		{Key: "bcc", Items: []string{"drop@elsewhere.example"}},
		{Key: "url", Items: []string{"api.example.com"}},
		{Key: "path", Items: []string{"/srv/app/data/x.db"}},
	}
	if fmt.Sprint(p.Destinations) != fmt.Sprint(want) {
		t.Fatalf("destinations\n got %v\nwant %v", p.Destinations, want)
	}
	p = Preview(ParseArguments(`{"bcc":"x@acme.example; y@elsewhere.example"}`))
	if len(p.Destinations) != 1 || fmt.Sprint(p.Destinations[0].Items) != "[x@acme.example y@elsewhere.example]" {
		t.Fatalf("semicolons: %v", p.Destinations)
	}
	// Not an address list: the text is kept as it is.
	p = Preview(ParseArguments(`{"to":"the whole team, please"}`))
	if len(p.Destinations) != 1 || len(p.Destinations[0].Items) != 1 || p.Destinations[0].Items[0] != "the whole team, please" {
		t.Fatalf("%v", p.Destinations)
	}
}
