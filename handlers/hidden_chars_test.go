package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
)

// Names a runtime sends and text a model writes are shown with their
// hidden and direction-changing characters as markers, on every screen
// that shows them, and never as the characters themselves.
func TestHiddenCharactersAreShownAsMarkers(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	err := l.Client.SyncConnector(context.Background(), "trick", client.Connector{DisplayName: "Mail\u202Eliam", Kind: "connector",
		Tools: []client.ConnectorTool{{Name: "send_mail", DisplayName: "Pay\u200bPal", Annotations: approval.Annotations{}}}})
	if err != nil {
		t.Fatal(err)
	}
	call := l.call("trick", "send_mail", `{"attachment":"invoice_4471_\u202Efdp.exe","note":"ok"}`)
	call["user"], call["conversation_id"], call["reason"] = dev.DemoAdmin.Subject, "conv\u2066-1", "Pay the\u00a0invoice\u200f"
	id := l.pending(t, call)

	noRaw := func(t *testing.T, page, body string) {
		t.Helper()
		for _, r := range []string{"\u202E", "\u200b", "\u2066", "\u200f"} {
			if strings.Contains(body, r) {
				t.Errorf("%s shows U+%04X as it is", page, []rune(r)[0])
			}
		}
	}
	_, inbox := admin.Get("/")
	noRaw(t, "inbox", inbox)
	for _, want := range []string{
		`Pay<span class="hidden-char" title="Hidden character: zero-width space">⟨U+200B⟩</span>Pal`,
		`Mail<span class="hidden-char" title="Hidden character: right-to-left override">⟨U+202E⟩</span>liam`,
		`invoice_4471_<span class="hidden-char" title="Hidden character: right-to-left override">⟨U+202E⟩</span>fdp.exe`,
		`conv<span class="hidden-char" title="Hidden character: left-to-right isolate">⟨U+2066⟩</span>-1`,
		`invoice<span class="hidden-char" title="Hidden character: right-to-left mark">⟨U+200F⟩</span>`,
		`data-testid="hidden-warning"`, `data-testid="hidden-flag"`,
	} {
		if !strings.Contains(inbox, want) {
			t.Errorf("inbox lacks %s", want)
		}
	}
	if n := strings.Count(inbox, `data-testid="hidden-flag"`); n != 1 {
		t.Errorf("%d lines flagged, want the one with the hidden character", n)
	}

	if s, _ := decide(admin, id, "reject", "reason", "Not this one"); s != http.StatusSeeOther {
		t.Fatal("reject:", s)
	}
	_, inbox = admin.Get("/")
	noRaw(t, "recent decisions", inbox)
	if !strings.Contains(inbox, `data-testid="recent-row"`) || !strings.Contains(inbox, "Pay<span class=\"hidden-char\"") {
		t.Error("recent decision does not show the marked tool name")
	}
	for _, page := range []struct{ path, marker string }{
		{"/admin/policies", "⟨U+200B⟩"}, {"/admin/insights", "⟨U+200B⟩"}, {"/admin/audit", "⟨U+2066⟩"},
	} {
		resp, body := admin.Get(page.path)
		if resp.StatusCode != http.StatusOK {
			t.Fatal(page.path, resp.StatusCode)
		}
		noRaw(t, page.path, body)
		if !strings.Contains(body, page.marker) {
			t.Errorf("%s does not show %s", page.path, page.marker)
		}
	}
}
