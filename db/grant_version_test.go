package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

// TestGrantKeepsTheVersionAskedUnder: "Always allow" given on an item asked
// under one policy version covers that version only (docs/security.md,
// standing consent). The policy changes while the item waits; the person
// then answers "Always allow"; the next call is asked again. Without the
// change in between, the same answer covers the next call.
func TestGrantKeepsTheVersionAskedUnder(t *testing.T) {
	for _, tc := range []struct {
		name         string
		changeBefore bool
		want         approval.Verdict
	}{
		{"PolicyChangedWhileWaiting", true, approval.Pending},
		{"PolicyUnchanged", false, approval.Allow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newBlockFixture(t)
			ctx := context.Background()
			a, _ := f.pending(t, "turn-1")
			if tc.changeBefore {
				f.setMode(t, approval.ModeRequireApproval) // a new version, standing approval still offered
				if f.tool.PolicyVersion == a.PolicyVersion {
					t.Fatalf("the policy version did not change: %d", a.PolicyVersion)
				}
			}
			if _, err := f.store.Decide(ctx, a.ID, f.user, approval.AlwaysAllow, ""); err != nil {
				t.Fatal(err)
			}
			req := db.CheckRequest{CallID: "later", User: f.user.Subject, ConversationID: "other-conv", TurnID: "turn-2",
				Connector: "mail", Tool: "send_email", Arguments: `{"n":99}`}
			res, err := f.store.Check(ctx, f.key, req, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
			if err != nil || res.Outcome.Verdict != tc.want {
				t.Fatalf("the next call: %v %+v, want %s", err, res.Outcome, tc.want)
			}
		})
	}
}
