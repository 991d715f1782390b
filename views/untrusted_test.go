package views

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
	"github.com/countersign/countersign/approval"
)

func render(t *testing.T, c templ.Component) string {
	t.Helper()
	var b strings.Builder
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestUntrusted(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"Plain", render(t, Untrusted("Send email")), `<bdi class="untrusted">Send email</bdi>`},
		{"Escaped", render(t, Untrusted(`<b title="x">&`)), `<bdi class="untrusted">&lt;b title=&#34;x&#34;&gt;&amp;</bdi>`},
		{"Override", render(t, UntrustedText("invoice_4471_\u202Efdp.exe")),
			`<bdi class="untrusted">invoice_4471_<span class="hidden-char" title="Hidden character: right-to-left override">⟨U+202E⟩</span>fdp.exe</bdi>`},
		{"LineFeedInName", render(t, Untrusted("a\nb")),
			`<bdi class="untrusted">a<span class="hidden-char" title="Hidden character: line feed">⟨U+000A⟩</span>b</bdi>`},
		{"LineFeedInValue", render(t, UntrustedText("a\nb\r")),
			`<bdi class="untrusted">a` + "\n" + `b<span class="hidden-char" title="Hidden character: carriage return">⟨U+000D⟩</span></bdi>`},
		{"Marked", Marked("Pay\u200bPal"), "Pay⟨U+200B⟩Pal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Fatalf("got  %s\nwant %s", tt.got, tt.want)
			}
		})
	}
}

func card(args, reason string) ApprovalCard {
	p := approval.Preview(approval.ParseArguments(args))
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return ApprovalCard{ID: "a1", ToolDisplay: "Send email", ConnectorDisplay: "Mail", ConversationID: "conv-1", TurnID: "turn-1",
		AgentReason: reason, Preview: p, Decisions: []approval.Decision{approval.Approve, approval.Reject},
		SendsOut: true, Destination: DestinationOf(p), CreatedAt: now, ExpiresAt: now.Add(time.Hour), Now: now}
}

func TestCardShowsHiddenCharacters(t *testing.T) {
	t.Run("Value", func(t *testing.T) {
		html := render(t, Card(card(`{"to":"finance@acme.example","attachment":"invoice_4471_\u202Efdp.exe"}`, "Send the invoice")))
		for _, want := range []string{`data-testid="hidden-warning"`, `⟨U+202E⟩</span>fdp.exe`, `class="has-hidden"`, `data-testid="hidden-flag"`} {
			if !strings.Contains(html, want) {
				t.Errorf("card lacks %s:\n%s", want, html)
			}
		}
		if strings.Contains(html, "\u202E") {
			t.Error("the override character itself reached the page")
		}
		if strings.Count(html, `data-testid="hidden-flag"`) != 1 {
			t.Error("only the line with the hidden character is flagged")
		}
	})
	t.Run("Reason", func(t *testing.T) {
		html := render(t, Card(card(`{"to":"finance@acme.example"}`, "Routine cleanup\revent: ignored")))
		if !strings.Contains(html, `data-testid="hidden-warning"`) || !strings.Contains(html, "Routine cleanup<span class=\"hidden-char\"") || strings.Contains(html, "\r") {
			t.Errorf("reason:\n%s", html)
		}
	})
	t.Run("Key", func(t *testing.T) {
		html := render(t, Card(card(`{"b\u200bcc":"x@acme.example"}`, "")))
		if !strings.Contains(html, `b<span class="hidden-char" title="Hidden character: zero-width space">⟨U+200B⟩</span>cc`) || !strings.Contains(html, `data-testid="hidden-warning"`) {
			t.Errorf("key:\n%s", html)
		}
	})
	t.Run("BeyondTheCut", func(t *testing.T) {
		html := render(t, Card(card(`{"note":"`+strings.Repeat("a", 4000)+"\u202E"+strings.Repeat("txt.exe", 300)+`"}`, "")))
		for _, want := range []string{`data-testid="hidden-warning"`, `class="has-hidden"`, "Holds hidden characters in the folded part"} {
			if !strings.Contains(html, want) {
				t.Errorf("card lacks %s:\n%s", want, html)
			}
		}
	})
	t.Run("Clean", func(t *testing.T) {
		html := render(t, Card(card(`{"to":"finance@acme.example","body":"line one\nline two"}`, "Pay the invoice")))
		if strings.Contains(html, "hidden-warning") || strings.Contains(html, "hidden-char") || strings.Contains(html, "hidden-flag") || strings.Contains(html, "lookalike") {
			t.Errorf("a clean card is flagged:\n%s", html)
		}
		for _, want := range []string{`<bdi class="untrusted">finance@acme.example</bdi>`, `through <span><bdi class="untrusted">Mail</bdi></span> — to`,
			`The agent says:</b> <bdi class="untrusted">Pay the invoice</bdi>`} {
			if !strings.Contains(html, want) {
				t.Errorf("card lacks %s:\n%s", want, html)
			}
		}
	})
}

func TestCardLookAlikeHost(t *testing.T) {
	tests := []struct {
		name, args string
		want       []string
	}{
		{"CyrillicInMail", `{"to":"billing@pаypal.com"}`, []string{"Cyrillic and Latin", "xn--pypal-4ve.com"}},
		{"CyrillicInURL", `{"url":"https://pаypal.com/login"}`, []string{"Cyrillic and Latin", "xn--pypal-4ve.com"}},
		{"NonASCII", `{"to":"team@münchen.de"}`, []string{"outside plain ASCII", "xn--mnchen-3ya.de"}},
		{"SecondRecipient", `{"to":"x@acme.example, billing@pаypal.com"}`, []string{"xn--pypal-4ve.com"}},
		{"LookAlikeFirst", `{"to":"billing@pаypal.com x@acme.example"}`, []string{"xn--pypal-4ve.com"}},
		{"OtherDestinationKey", `{"to":"x@acme.example","bcc":["billing@pаypal.com"]}`, []string{"xn--pypal-4ve.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			html := render(t, Card(card(tt.args, "")))
			if !strings.Contains(html, `data-testid="lookalike"`) {
				t.Fatalf("no look-alike warning:\n%s", html)
			}
			for _, w := range tt.want {
				if !strings.Contains(html, w) {
					t.Errorf("warning lacks %q:\n%s", w, html)
				}
			}
		})
	}
	if html := render(t, Card(card(`{"to":"billing@paypal.com, x@acme.example","url":"https://files.example/a"}`, ""))); strings.Contains(html, "lookalike") {
		t.Errorf("an ASCII host is flagged:\n%s", html)
	}
	// A tool that does not send data out still warns about the host.
	c := card(`{"url":"https://pаypal.com/login"}`, "")
	c.SendsOut, c.Destination = false, ""
	if html := render(t, Card(c)); !strings.Contains(html, `data-testid="lookalike"`) || !strings.Contains(html, "xn--pypal-4ve.com") {
		t.Errorf("no look-alike warning without a destination line:\n%s", html)
	}
}
