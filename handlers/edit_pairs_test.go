package handlers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// An edit sent with new_string before old_string reads old then new in
// the card's edit view (monospace, above the arguments), while the
// arguments as sent keep the order sent (issue 42), on the inbox card and
// the request page.
func TestEditCardOldThenNew(t *testing.T) {
	l := newLoop(t)
	err := l.Client.SyncConnector(context.Background(), "code", client.Connector{DisplayName: "Claude Code", Kind: "connector",
		Tools: []client.ConnectorTool{{Name: "Edit", DisplayName: "Edit", Annotations: approval.Annotations{}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB.SetToolPolicy(context.Background(), approval.SystemActor, "code", "Edit",
		approval.Policy{Mode: approval.ModeRequireApproval}); err != nil {
		t.Fatal(err)
	}
	id := l.pending(t, l.call("code", "Edit", `{"file_path":"src/app.go","new_string":"NEW-TEXT-MARK","old_string":"OLD-TEXT-MARK"}`))
	for _, path := range []string{"/", "/approvals/" + id} {
		_, body := l.Member.Get(path)
		var card string
		for _, c := range testIDs(parseHTML(t, body), "approval-card") {
			if attr(c, "data-approval-id") == id {
				view := testIDs(c, "edit-pairs")
				if len(view) != 1 {
					t.Fatalf("%s: %d edit views", path, len(view))
				}
				old, nw := nodeText(testIDs(view[0], "edit-old")[0]), nodeText(testIDs(view[0], "edit-new")[0])
				if !strings.Contains(old, "OLD-TEXT-MARK") || !strings.Contains(nw, "NEW-TEXT-MARK") {
					t.Fatalf("%s: old side %q, new side %q", path, old, nw)
				}
				var keys []string
				for _, k := range testIDs(c, "arg-key") {
					keys = append(keys, strings.TrimSpace(nodeText(k)))
				}
				if strings.Join(keys, ",") != "file_path,new_string,old_string" {
					t.Fatalf("%s: the arguments as sent read %v", path, keys)
				}
				card = nodeText(c)
			}
		}
		// Read from the top: the edit view's old, its new, then the
		// arguments as sent (new_string first, as sent).
		o, n, sent := strings.Index(card, "OLD-TEXT-MARK"), strings.Index(card, "NEW-TEXT-MARK"), strings.Index(card, "Arguments as sent")
		if o < 0 || n < o || sent < n || strings.Index(card[sent:], "NEW-TEXT-MARK") > strings.Index(card[sent:], "OLD-TEXT-MARK") {
			t.Fatalf("%s: order on the card: old %d new %d as-sent %d", path, o, n, sent)
		}
		if !strings.Contains(body, `<pre class="edit-text" data-testid="edit-text">`) {
			t.Fatalf("%s: the edit's text is not monospace", path)
		}
	}
}
