package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/dev"
)

func TestPreviewRetention(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	old := l.call("mail", "send_email", `{"to":"old@example.com"}`)
	old["reason"] = "an old reason"
	old["context"] = map[string]any{"diff": "--- f\n+++ f\n@@ -1 +1 @@\n-a\n+b\n"}
	oldID := l.pending(t, old)
	decide(l.Member, oldID, "approve")
	recent := l.call("mail", "send_email", `{"to":"recent@example.com"}`)
	recent["context"] = old["context"]
	recentID := l.pending(t, recent)
	decide(l.Member, recentID, "reject")
	pendingID := l.pending(t, l.call("mail", "send_email", `{"to":"pending@example.com"}`))
	_, _ = l.DB.Pool.Exec(ctx, `UPDATE approvals SET decided_at = now() - interval '31 days' WHERE id = $1`, oldID)

	n, err := l.DB.RemoveOldPreviews(ctx, 30*24*time.Hour, 100)
	if err != nil || n != 1 {
		t.Fatal(n, err)
	}
	for id, removed := range map[string]bool{oldID: true, recentID: false, pendingID: false} {
		a, err := l.DB.ApprovalForViewer(ctx, id, dev.DemoMember.Subject)
		if err != nil {
			t.Fatal(err)
		}
		if a.Preview.Removed != removed || (removed && (len(a.Preview.Lines) != 0 || a.AgentReason != "")) || (!removed && len(a.Preview.Lines) == 0) {
			t.Fatalf("%s: removed=%v %+v", id, a.Preview.Removed, a.Preview)
		}
		if a.ArgumentsDigest == "" {
			t.Fatal("digest removed")
		}
		// The runtime's diff goes with the preview.
		if id != pendingID && (a.Diff == nil || a.Diff.Removed != removed || (removed == (len(a.Diff.Files) > 0))) {
			t.Fatalf("%s: diff %+v", id, a.Diff)
		}
	}
	if n, _ := l.DB.RemoveOldPreviews(ctx, 30*24*time.Hour, 100); n != 0 {
		t.Fatal("removed twice")
	}
}
