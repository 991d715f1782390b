package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// passkeyScenario walks the passkey actions once for TestAuditScenario:
// passkey added ×2, passkey removed, passkeys reset, policy changed (step-up
// turned on), approval requested, approval refused without passkey.
func (l *loop) passkeyScenario(t *testing.T, admin *testenv.Browser) {
	t.Helper()
	ctx := context.Background()
	member := l.User(dev.DemoMember.Subject)
	pk, err := l.DB.AddPasskey(ctx, member, "Laptop", testenv.NewSoftAuthenticator(t, testenv.LocalhostURL(l.BaseURL)).Credential(t))
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := l.Member.PostForm("/settings/passkeys/"+itoa(pk.ID)+"/remove", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatal("remove passkey:", resp.StatusCode)
	}
	if _, err := l.DB.AddPasskey(ctx, member, "Phone", testenv.NewSoftAuthenticator(t, testenv.LocalhostURL(l.BaseURL)).Credential(t)); err != nil {
		t.Fatal(err)
	}
	if resp, _ := admin.PostForm("/admin/passkeys/reset", url.Values{"subject": {member.Subject}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatal("reset passkeys:", resp.StatusCode)
	}
	id := toolID(t, l.Env, "calendar", "create_event")
	if resp, _ := admin.PostForm("/admin/policies/"+id+"/proof", url.Values{"proof": {"passkey"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatal("policy proof:", resp.StatusCode)
	}
	item := l.pending(t, map[string]any{"call_id": "step-up", "user": dev.DemoMember.Subject, "conversation_id": "c-passkey",
		"turn_id": "turn-1", "connector": "calendar", "tool": "create_event", "arguments": `{"title":"x"}`})
	if status, _ := decide(l.Member, item, "approve"); status != http.StatusForbidden {
		t.Fatal("approve without passkey:", status)
	}
	if a, err := l.DB.ApprovalForViewer(ctx, item, member.Subject); err != nil || a.Status != approval.StatusPending {
		t.Fatal(a.Status, err)
	}
}
