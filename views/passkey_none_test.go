package views

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
)

// A call that needs a passkey, shown to someone with none, says so and
// links to Settings → Passkeys (issue 42: no dead ends).
func TestPasskeyNoneSaysSo(t *testing.T) {
	render := func(none bool) string {
		c := ApprovalCard{ID: "00000000-0000-4000-8000-000000000001", ToolDisplay: "Send email", Decisions: []approval.Decision{approval.Approve, approval.Reject},
			Preview: approval.Preview(approval.ParseArguments(`{"to":"a@example.com"}`)), PasskeyChallenge: "abc", PasskeyRP: "localhost", NoPasskey: none}
		var b strings.Builder
		if err := Card(c).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if s := render(true); !strings.Contains(s, `data-testid="passkey-none"`) || !strings.Contains(s, `href="/settings#passkeys-heading"`) {
		t.Fatal("no word that the viewer has no passkey, or no link to add one")
	}
	if s := render(true); strings.Contains(s, `value="approve"`) {
		t.Fatal("an Approve that cannot work is offered")
	}
	if s := render(false); strings.Contains(s, `data-testid="passkey-none"`) || !strings.Contains(s, `data-testid="passkey-required"`) {
		t.Fatal("with a passkey the card says there is none")
	}
}
