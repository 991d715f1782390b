package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/internal/testenv"
)

// "Who decides" reads the same on every screen, from the one rule
// (approval.DeciderRule.CallWords) that follows visibility (issue 42): the
// request page's card, the inbox card, the admins' Pending page and the
// Activity page's waiting row, for a team key's call, a quorum call and a
// call its owner decides.
func TestWhoDecidesOneSource(t *testing.T) {
	l := newOrgLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	deploy := l.deploy(t)
	pay := l.payment(t, 25000)
	mail := l.pending(t, l.call("mail", "send_email", `{"to":"who-decides@example.org"}`))
	want := map[string]string{
		deploy: approval.OwnerRule.CallWords("platform"),
		pay:    approval.DeciderRule{Deciders: approval.DecidersQuorum, Team: "finance", Quorum: 2}.CallWords(""),
		mail:   approval.OwnerRule.CallWords(""),
	}
	if want[deploy] != "any member of platform" || !strings.HasPrefix(want[pay], "two of finance") || want[mail] != "the agent's owner" {
		t.Fatalf("the rule's words: %q", want)
	}
	deciders := func(b *testenv.Browser, path, rowID, idAttr, textID, id string) string {
		t.Helper()
		resp, body := b.Get(path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		for _, r := range testIDs(parseHTML(t, body), rowID) {
			if attr(r, idAttr) == id {
				if n := testIDs(r, textID); len(n) > 0 {
					return strings.Join(strings.Fields(nodeText(n[0])), " ")
				}
				return ""
			}
		}
		return "(not listed)"
	}
	// Who sees each call, and may decide it: Sam the deploy, Finn the
	// payment, Maya (as her own agent's owner) the mail.
	for id, b := range map[string]*testenv.Browser{deploy: l.Sam, pay: l.Finn, mail: l.Member} {
		w := want[id]
		for _, path := range []string{"/", "/approvals/" + id} {
			got := deciders(b, path, "approval-card", "data-approval-id", "deciders", id)
			if id == mail {
				// The viewer's own call, which they alone decide: the card
				// does not repeat it.
				if got != "" {
					t.Errorf("%s: the owner's own card says %q", path, got)
				}
				continue
			}
			if got != "Who decides: "+w && !strings.HasPrefix(got, "Who decides: "+w+" · ") {
				t.Errorf("%s of %s says %q, want %q", path, id, got, w)
			}
		}
		if got := deciders(admin, "/admin/pending", "overview-row", "data-approval-id", "overview-deciders", id); got != w && !strings.HasPrefix(got, w+" (") {
			t.Errorf("the Pending page says %q for %s, want %q", got, id, w)
		}
	}
	// Maya's own payment waits for finance: Activity says so in the same words.
	if got := deciders(l.Member, "/activity", "activity-waiting-row", "data-approval-id", "activity-waiting-for", pay); !strings.HasPrefix(got, "Waits for "+want[pay]+" · ") {
		t.Errorf("Activity says %q, want %q", got, want[pay])
	}
	// Maya's delegate-free view of her own mail on Activity is hers to decide.
	if got := deciders(l.Member, "/activity", "activity-waiting-row", "data-approval-id", "activity-waiting-for", mail); got != "" {
		t.Errorf("Activity's row of Maya's own mail says %q", got)
	}
}
