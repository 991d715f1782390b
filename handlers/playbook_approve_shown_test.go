package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/dev"
)

// playbookFingerprint is the demo playbook's current fingerprint, as the
// approval dialog's form carries it.
func (l *loop) playbookFingerprint(t *testing.T) string {
	t.Helper()
	var fp string
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT fingerprint FROM playbooks WHERE id = $1`, dev.DemoPlaybookID).Scan(&fp); err != nil {
		t.Fatal(err)
	}
	return fp
}

var dialogFingerprintRE = regexp.MustCompile(`name="fingerprint" value="([^"]*)"`)

// "Approve and enable" approves what the dialog showed: a definition
// changed since the dialog was drawn approves nothing, and the dialog comes
// back with the current tools and a line saying why.
func TestPlaybookApproveWhatWasShown(t *testing.T) {
	l := newLoop(t)
	page := "/playbooks/" + dev.DemoPlaybookID
	onlyMail := dev.DemoPlaybook()
	onlyMail.Steps[2].Tools = []approval.Pair{{Connector: "mail", Tool: "send_email"}}
	l.putPlaybook(t, dev.DemoMember.Subject, onlyMail)

	resp, body := l.Member.PostForm(page+"/enable", url.Values{})
	m := dialogFingerprintRE.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusConflict || strings.Count(body, `data-testid="dialog-pair"`) != 1 || m == nil || m[1] != l.playbookFingerprint(t) {
		t.Fatalf("dialog for one tool with its fingerprint: %d %v", resp.StatusCode, m)
	}
	shown := m[1]

	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook()) // the runtime adds calendar · create_event
	preapprovals := func() int {
		return l.countPlaybookRows(t, `SELECT count(*) FROM playbook_preapprovals`)
	}
	for _, fp := range []string{shown, ""} {
		resp, body = l.Member.PostForm(page+"/approve", url.Values{"then": {"enable"}, "fingerprint": {fp}})
		if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `data-testid="dialog-changed"`) ||
			strings.Count(body, `data-testid="dialog-pair"`) != 2 || !strings.Contains(body, "create_event") {
			t.Fatalf("fingerprint %q: %d, want the dialog again with both tools", fp, resp.StatusCode)
		}
		if n := preapprovals(); n != 0 {
			t.Fatalf("fingerprint %q: %d tools approved from a dialog that did not show them", fp, n)
		}
	}
	if status, out := l.startRun(t); status != http.StatusConflict {
		t.Fatal("the playbook was enabled:", status, out)
	}

	// The dialog drawn again carries the current fingerprint: that one approves.
	m = dialogFingerprintRE.FindStringSubmatch(body)
	if m == nil || m[1] != l.playbookFingerprint(t) {
		t.Fatalf("the redrawn dialog's fingerprint: %v", m)
	}
	if resp, _ = l.Member.PostForm(page+"/approve", url.Values{"then": {"enable"}, "fingerprint": {m[1]}}); resp.StatusCode != http.StatusSeeOther || preapprovals() != 2 {
		t.Fatalf("approve the shown definition: %d, %d approved", resp.StatusCode, preapprovals())
	}
}

// approveCurrentDefinition is the dialog's "Approve and enable" form for the demo
// playbook's current definition.
func approveCurrentDefinition(t *testing.T, l *loop) url.Values {
	return url.Values{"then": {"enable"}, "fingerprint": {l.playbookFingerprint(t)}}
}
