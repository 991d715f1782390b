package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/dev"
)

// TestPlaybookDialogNoDeadEnd: the "Tool use approval" dialog marks, before
// its button, each tool a playbook cannot pre-approve and why, and then
// does not offer to pre-approve the set (issue 42); with every tool
// pre-approvable it offers the button as before.
func TestPlaybookDialogNoDeadEnd(t *testing.T) {
	l := newLoop(t)
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
	enable := func() string {
		resp, body := l.Member.PostForm("/playbooks/"+dev.DemoPlaybookID+"/enable", url.Values{})
		if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `data-testid="approval-dialog"`) {
			t.Fatalf("dialog: %d", resp.StatusCode)
		}
		return body[strings.Index(body, `data-testid="approval-dialog"`):]
	}
	if d := enable(); !strings.Contains(d, `data-testid="approve-tools"`) || strings.Contains(d, `data-testid="dialog-cannot"`) {
		t.Fatal("a set the owner may pre-approve is not offered")
	}
	if _, err := l.DB.SetToolPolicy(context.Background(), approval.SystemActor, "mail", "send_email", approval.Policy{Mode: approval.ModeRequireApproval,
		Rule: approval.DeciderRule{Deciders: approval.DecidersQuorum, Team: "finance", Quorum: 2}}); err != nil {
		t.Fatal(err)
	}
	d := enable()
	cannot := strings.Index(d, `data-testid="dialog-cannot"`)
	if cannot < 0 || !strings.Contains(visibleText(d), "Cannot be pre-approved: its calls are decided by two of finance") {
		t.Fatalf("the quorum tool is not marked: %s", visibleText(d))
	}
	if strings.Contains(d, `data-testid="approve-tools"`) || !strings.Contains(d, `data-testid="dialog-blocked"`) {
		t.Fatal("the dialog offers to pre-approve a quorum tool")
	}
	if i := strings.Index(d, `data-testid="cancel-dialog"`); i < cannot {
		t.Fatal("the mark comes after the buttons")
	}
}
