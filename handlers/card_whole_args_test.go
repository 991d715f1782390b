package handlers_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// cardHTML is the inbox card of one pending call.
func cardHTML(t *testing.T, l *loop, id string) string {
	t.Helper()
	_, body := l.Member.Get("/")
	m := regexp.MustCompile(`(?s)<li class="card[^"]*" id="approval-` + id + `".*?</form>\s*</li>`).FindString(body)
	if m == "" {
		i := strings.Index(body, `id="approval-`+id+`"`)
		if i < 0 {
			t.Fatal("no card")
		}
		m = body[i:]
	}
	return m
}

func jsonKeys(n int, extra string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"note%d":"x",`, i)
	}
	return b.String() + extra + "}"
}

// Keys past the first hundred are checked though not shown: the card warns
// of their hidden characters and look-alike hosts, names the destination
// key, and links to the whole arguments, which warn as well.
func TestCardChecksKeysNotShown(t *testing.T) {
	l := newLoop(t)
	id := l.pending(t, l.call("mail", "send_email", jsonKeys(120, `"bcc":"exfil@pаypal.com","cmd\u202e":"rm -rf /\u200b"`)))
	card := cardHTML(t, l, id)
	for what, want := range map[string]string{
		"hidden warning":   `data-testid="hidden-warning"`,
		"look-alike":       `data-testid="lookalike"`,
		"punycode":         "xn--",
		"bcc named":        `data-testid="more-destinations"`,
		"link to all":      `href="/approvals/` + id + `/values/raw"`,
		"flag on the rest": "Some of them hold hidden characters",
	} {
		if !strings.Contains(card, want) {
			t.Errorf("card: no %s", what)
		}
	}
	resp, body := getHTMX(l.Member, l.BaseURL, "/approvals/"+id+"/values/raw")
	if resp.StatusCode != 200 || !strings.Contains(body, "note119") || !strings.Contains(body, `cmd\u202e`) || !strings.Contains(body, `data-testid="lookalike"`) {
		t.Fatalf("whole arguments: %d %s", resp.StatusCode, body)
	}
	clean := l.pending(t, l.call("mail", "send_email", jsonKeys(120, `"bcc":"a@paypal.com"`)))
	if c := cardHTML(t, l, clean); strings.Contains(c, `data-testid="lookalike"`) || strings.Contains(c, `data-testid="hidden-warning"`) {
		t.Fatal("false alarm on clean keys")
	}
}

// A look-alike host past the cut of a long destination value is warned
// about on the card and on the expanded value.
func TestCardLookAlikeBeyondCut(t *testing.T) {
	l := newLoop(t)
	addrs := make([]string, 120)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("user%d@acme.example", i)
	}
	for name, args := range map[string]string{
		"text":  `{"to":"` + strings.Join(addrs, ", ") + `, ceo@pаypal.com"}`,
		"array": `{"to":["` + strings.Join(addrs[:100], `","`) + `","ceo@pаypal.com"]}`,
	} {
		id := l.pending(t, l.call("mail", "send_email", args))
		if c := cardHTML(t, l, id); !strings.Contains(c, `data-testid="lookalike"`) {
			t.Errorf("%s: card does not warn", name)
		}
		if _, body := getHTMX(l.Member, l.BaseURL, "/approvals/"+id+"/values/0"); !strings.Contains(body, `data-testid="lookalike"`) {
			t.Errorf("%s: expanded value does not warn", name)
		}
	}
}

// Two keys that differ only past the cut are never shown as the same key:
// each is marked as shortened, with its length, and the whole key can be
// read while the call waits.
func TestCardMarksLongKeys(t *testing.T) {
	l := newLoop(t)
	base := strings.Repeat("k", 90)
	id := l.pending(t, l.call("mail", "send_email", `{"`+base+`_NOT":"5","`+base+`_YES":"500000"}`))
	card := cardHTML(t, l, id)
	if strings.Count(card, `data-testid="key-cut"`) != 2 || !strings.Contains(card, "(key of 94 characters, shown in part)") {
		t.Fatal("long keys not marked as shortened")
	}
	if !strings.Contains(card, base[:80]+`</bdi>…`) || !strings.Contains(card, `href="/approvals/`+id+`/values/1"`) {
		t.Fatal("no ellipsis, or no way to read the whole key")
	}
	if _, body := getHTMX(l.Member, l.BaseURL, "/approvals/"+id+"/values/1"); !strings.Contains(body, `data-testid="full-key"`) || !strings.Contains(body, base+"_YES") {
		t.Fatal("the expansion does not show the whole key")
	}
}
