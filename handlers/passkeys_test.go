package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

type passkeyCase struct {
	*loop
	admin  *testenv.Browser
	member db.User
}

func (l *loop) addPasskey(t *testing.T, u db.User, name string) db.Passkey {
	t.Helper()
	pk, err := l.DB.AddPasskey(context.Background(), u, name, testenv.NewSoftAuthenticator(t, testenv.LocalhostURL(l.BaseURL)).Credential(t))
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

func (c passkeyCase) passkeys(t *testing.T) int {
	t.Helper()
	list, err := c.DB.PasskeysFor(context.Background(), c.member.Subject)
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

func TestPasskeyScreens(t *testing.T) {
	l := newLoop(t)
	c := passkeyCase{loop: l, admin: l.NewBrowser(), member: l.User(dev.DemoMember.Subject)}
	c.admin.SignIn("admin")
	mail := toolID(t, l.Env, "mail", "send_email")

	t.Run("ErrRemoveWithoutCSRF", func(t *testing.T) {
		pk := l.addPasskey(t, c.member, "Laptop")
		resp, _ := l.Member.PostForm("/settings/passkeys/"+itoa(pk.ID)+"/remove", url.Values{"csrf_token": {"wrong"}})
		if resp.StatusCode != http.StatusForbidden || c.passkeys(t) != 1 {
			t.Fatalf("status %d, %d passkeys", resp.StatusCode, c.passkeys(t))
		}
		if resp, _ := c.admin.PostForm("/settings/passkeys/"+itoa(pk.ID)+"/remove", url.Values{"confirm": {"yes"}}); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("another person's passkey: %d, want 404", resp.StatusCode)
		}
	})
	t.Run("SettingsListsPasskeys", func(t *testing.T) {
		_, body := l.Member.Get("/settings")
		if !strings.Contains(body, `data-testid="passkey-name"`) || !strings.Contains(body, "Laptop") {
			t.Fatal("the passkey is not listed")
		}
	})
	t.Run("ErrAddWithoutCeremony", func(t *testing.T) {
		resp, body := l.Member.PostForm("/settings/passkeys", url.Values{"name": {"Phone"}, "credential": {`{"id":"x"}`}})
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "start again") {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("PolicyProofForm", func(t *testing.T) {
		resp, body := c.admin.PostForm("/admin/policies/"+mail+"/proof", url.Values{"proof": {"passkey"}, "proof_condition": {"args.amount >"}})
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `data-testid="proof-error"`) {
			t.Fatalf("bad condition: %d", resp.StatusCode)
		}
		if resp, _ := l.Member.PostForm("/admin/policies/"+mail+"/proof", url.Values{"proof": {"passkey"}}); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("a member: %d, want 404", resp.StatusCode)
		}
		before := c.tool(t, "mail", "send_email")
		if resp, _ := c.admin.PostForm("/admin/policies/"+mail+"/proof", url.Values{"proof": {"passkey"}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("save: %d", resp.StatusCode)
		}
		after := c.tool(t, "mail", "send_email")
		if after.Proof != "passkey" || after.PolicyVersion != before.PolicyVersion+1 || after.StandingApproval || after.Matchable {
			t.Fatalf("after: %+v", after)
		}
		if n := l.auditCount(t, "", approval.ActionPolicyChanged); n < 1 {
			t.Fatal("not audited")
		}
		_, body = c.admin.Get("/admin/policies/" + mail)
		if !strings.Contains(body, "Requires a passkey to approve.") {
			t.Fatal("the policy page does not say so")
		}
	})
	t.Run("ConfirmRemovingTheLastPasskey", func(t *testing.T) {
		list, _ := l.DB.PasskeysFor(context.Background(), c.member.Subject)
		id := itoa(list[0].ID)
		resp, body := l.Member.PostForm("/settings/passkeys/"+id+"/remove", url.Values{})
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-testid="passkey-confirm"`) || !strings.Contains(body, "Send email") ||
			c.passkeys(t) != 1 {
			t.Fatalf("status %d, %d passkeys", resp.StatusCode, c.passkeys(t))
		}
		if resp, _ := l.Member.PostForm("/settings/passkeys/"+id+"/remove", url.Values{"confirm": {"yes"}}); resp.StatusCode != http.StatusSeeOther || c.passkeys(t) != 0 {
			t.Fatalf("confirmed: %d", resp.StatusCode)
		}
	})
	t.Run("BatchRefusesAPasskeyItem", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", `{"to":"a@example.com"}`))
		resp, body := l.Member.PostForm("/approvals/batch", url.Values{"decision": {"approve"}, "id": {id}})
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "needs your passkey") || l.status(t, id) != "pending" {
			t.Fatalf("batch: %d %s", resp.StatusCode, l.status(t, id))
		}
	})
	t.Run("AdminPasskeys", func(t *testing.T) {
		l.addPasskey(t, c.member, "Phone")
		if resp, _ := l.Member.Get("/admin/passkeys"); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("a member: %d", resp.StatusCode)
		}
		_, body := c.admin.Get("/admin/passkeys")
		if !strings.Contains(body, "Maya Member") || !strings.Contains(body, `data-testid="passkey-reset"`) {
			t.Fatal("the member's passkey is not listed")
		}
		if resp, _ := c.admin.PostForm("/admin/passkeys/reset", url.Values{"subject": {c.member.Subject}, "csrf_token": {""}}); resp.StatusCode != http.StatusForbidden || c.passkeys(t) != 1 {
			t.Fatalf("without CSRF: %d", resp.StatusCode)
		}
		if resp, _ := c.admin.PostForm("/admin/passkeys/reset", url.Values{"subject": {c.member.Subject}}); resp.StatusCode != http.StatusSeeOther || c.passkeys(t) != 0 {
			t.Fatalf("reset: %d", resp.StatusCode)
		}
	})
}

func (c passkeyCase) tool(t *testing.T, connector, name string) db.Tool {
	t.Helper()
	var id int64
	if err := c.DB.Pool.QueryRow(context.Background(), `SELECT id FROM tools WHERE connector = $1 AND name = $2`, connector, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	tool, err := c.DB.ToolByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}
