package views

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
)

// A value is laid out as tokens: the text between white space stays one
// unit (so "--" is never split), white space and line breaks stay as sent,
// and a hidden character is a marker inside its token.
func TestUntrustedValueTokens(t *testing.T) {
	got := render(t, UntrustedValue("bash -s -- --yes\n<b>x\u202Ey</b>"))
	want := `<bdi class="untrusted"><span class="tok">bash</span> <span class="tok">-s</span> <span class="tok">--</span> <span class="tok">--yes</span>` + "\n" +
		`<span class="tok">&lt;b&gt;x<span class="hidden-char" title="Hidden character: right-to-left override">⟨U+202E⟩</span>y&lt;/b&gt;</span></bdi>`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := render(t, UntrustedValue("  ")); got != `<bdi class="untrusted">  </bdi>` {
		t.Fatalf("white space only: %s", got)
	}
}

// A folded value shows its beginning, the fold with what it leaves out
// (a control while the call waits, words once it is settled), and its end.
func TestFoldedValue(t *testing.T) {
	cmd := strings.Repeat("x ", 2500) + "&& rm -rf /srv/app/data/*"
	p := approval.Preview(approval.ParseArguments(`{"command":"` + cmd + `"}`))
	live := render(t, ArgumentsOf("a1", p, true))
	for _, want := range []string{`data-testid="value-folded"`, `929 characters hidden — show</a>`, `href="/approvals/a1/values/0"`,
		`<span class="tok">&amp;&amp;</span> <span class="tok">rm</span> <span class="tok">-rf</span> <span class="tok">/srv/app/data/*</span>`} {
		if !strings.Contains(live, want) {
			t.Errorf("waiting call lacks %s", want)
		}
	}
	settled := render(t, Arguments(p))
	if strings.Contains(settled, "href=") || !strings.Contains(settled, "929 characters hidden (the full text was kept only while the request waited)") ||
		!strings.Contains(settled, `/srv/app/data/*`) {
		t.Error("settled call: no words in the fold, a link, or no end")
	}
}

// A preview stored before values were folded kept the beginning only: the
// line says that the end is not shown, and offers the whole value while
// the call waits.
func TestHeadOnlyPreviewSaysTheEndIsMissing(t *testing.T) {
	old := approval.ArgumentPreview{Parsed: true, Lines: []approval.PreviewLine{{Key: "command", Value: strings.Repeat("a", 240), Length: 302, Shortened: true}}}
	html := render(t, ArgumentsOf("a1", old, true))
	if !strings.Contains(html, "(showing the first 240 of 302 characters; the end is not shown)") || !strings.Contains(html, "Show all 302 characters") {
		t.Fatalf("old preview:\n%s", html)
	}
	if strings.Contains(html, "value-folded") {
		t.Fatal("an old preview is drawn as folded")
	}
	raw := approval.ArgumentPreview{Raw: "{", RawLength: 900, RawShortened: true, Problem: "not valid JSON"}
	if html := render(t, Arguments(raw)); !strings.Contains(html, "(showing the first 1 of 900 characters; the end is not shown)") {
		t.Fatalf("old raw preview:\n%s", html)
	}
}

// The risk line names every recipient in to, cc and bcc; a preview stored
// before destinations were recorded is read from all its lines.
func TestTouchesEveryDestination(t *testing.T) {
	p := approval.Preview(approval.ParseArguments(`{"to":["a@acme.example","b@acme.example"],"cc":"c@acme.example","bcc":"d@elsewhere.example","subject":"s"}`))
	c := card(`{}`, "")
	c.Preview = p
	html := render(t, Card(c))
	for _, want := range []string{"— to 4 recipients:", `>bcc</bdi></dt>`, `d@elsewhere.example`, `c@acme.example`} {
		if !strings.Contains(html, want) {
			t.Errorf("risk line lacks %s", want)
		}
	}
	if n := strings.Count(html, `data-testid="destination"`); n != 4 {
		t.Errorf("%d destinations named", n)
	}
	old := p
	old.Destinations = nil
	if got := Recipients(old); strings.Join(got, ",") != "a@acme.example,b@acme.example,c@acme.example,d@elsewhere.example" {
		t.Errorf("old preview: %v", got)
	}
	one := approval.Preview(approval.ParseArguments(`{"url":"https://api.example.com/v1/x?y=1"}`))
	c.Preview = one
	if html := render(t, Card(c)); !strings.Contains(html, `— to <span class="mono" data-testid="destination"><bdi class="untrusted">api.example.com</bdi>`) {
		t.Errorf("single destination:\n%s", html)
	}
}

// A destructive call that sends nothing out names the paths it writes.
func TestDestructiveNamesPaths(t *testing.T) {
	c := card(`{}`, "")
	c.SendsOut, c.Destructive = false, true
	c.Preview = approval.Preview(approval.ParseArguments(`{"path":"/shared/reports/q2.xlsx","recursive":true}`))
	html := render(t, Card(c))
	if !strings.Contains(html, `This action can’t be undone — path: <span class="mono" data-testid="destination"><bdi class="untrusted">/shared/reports/q2.xlsx</bdi></span>`) {
		t.Fatalf("destructive line:\n%s", html)
	}
	c.Preview = approval.Preview(approval.ParseArguments(`{"command":"make"}`))
	if html := render(t, Card(c)); !strings.Contains(html, "This action can’t be undone.</div>") {
		t.Fatalf("without a path:\n%s", html)
	}
}
