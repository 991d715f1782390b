package notify_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/notify"
)

// TestMailNamesAreNotLinks: names a runtime chose reach a mail without
// "://", so that no mail client turns them into links.
func TestMailNamesAreNotLinks(t *testing.T) {
	base, _ := url.Parse("https://countersign.example.com")
	subject, body := notify.ComposeMail(base, []db.Delivery{{ApprovalID: "0b1e6f3a-6f0e-4c36-9a55-2f1f5e1c9d7e",
		ToolDisplay: "Open https://evil.example/login", ConnectorDisplay: "ftp://files.example", AgentKey: "key http://x.example"}})
	for _, s := range []string{subject, body} {
		for _, link := range []string{"https://evil", "ftp://files", "http://x.example"} {
			if strings.Contains(s, link) {
				t.Errorf("the mail carries the link %s:\n%s", link, s)
			}
		}
	}
	if !strings.Contains(body, "https[:]//evil.example/login") || !strings.Contains(subject, "https[:]//evil") {
		t.Errorf("the name is not shown defused:\n%s\n%s", subject, body)
	}
	if !strings.Contains(body, "https://countersign.example.com/approvals/") {
		t.Errorf("the review link itself must stay a link:\n%s", body)
	}
}
