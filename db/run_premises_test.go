package db_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

var runKey = db.APIKey{ID: 1, Name: "runtime"}

func runDef(instructions string) approval.Definition {
	return approval.Definition{Name: "Pay", Instructions: instructions, Steps: []approval.Step{{ID: "s", Title: "S",
		WorkType: approval.WorkType{ID: "w", Version: "1"}, Tools: []approval.Pair{{Connector: "bank", Tool: "pay"}}}}}
}

// preapprovedRun registers a playbook owned by owner-1 using one tool that
// requires approval, pre-approves it, enables it and starts a run.
func preapprovedRun(t *testing.T) (*db.DB, db.Run) {
	t.Helper()
	ctx := context.Background()
	store, _ := testenv.OpenDB(t)
	if err := store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "bank", DisplayName: "Bank", Kind: "connector",
		Tools: []db.ToolSync{{Name: "pay", DisplayName: "Pay"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetToolPolicy(ctx, approval.SystemActor, "bank", "pay", approval.Policy{Mode: approval.ModeRequireApproval}); err != nil {
		t.Fatal(err)
	}
	pb, err := store.UpsertPlaybook(ctx, approval.SystemActor, "pb", "owner-1", runDef("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := store.PreApprove(ctx, db.User{Subject: "owner-1"}, "pb", pb.Fingerprint); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	if _, err := store.SetPlaybookState(ctx, approval.SystemActor, "", "pb", true, nil); err != nil {
		t.Fatal(err)
	}
	run, err := store.StartRun(ctx, runKey, "pb")
	if err != nil || len(run.Preapproved) != 1 {
		t.Fatal(run, err)
	}
	return store, run
}

func checkInRun(t *testing.T, store *db.DB, key db.APIKey, user, runID, callID string) approval.Outcome {
	t.Helper()
	res, err := store.Check(context.Background(), key, db.CheckRequest{CallID: callID, User: user, ConversationID: "conv", TurnID: "t1",
		Connector: "bank", Tool: "pay", Arguments: `{"amount":1}`, PlaybookRunID: runID}, db.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Outcome
}

// A run id passes its pre-approved tool only under the premises of its
// start: the same key, the owner then and now, an enabled playbook, and the
// live pre-approval it laid out. Anything else is refused without a prompt,
// and the refusal is recorded on the run.
func TestRunPreapprovalPremises(t *testing.T) {
	ctx := context.Background()
	owner := db.User{Subject: "owner-1"}
	cases := []struct {
		name   string
		key    db.APIKey
		user   string
		change func(t *testing.T, store *db.DB)
	}{
		{"OtherKey", db.APIKey{ID: 2, Name: "other"}, "owner-1", nil},
		{"OtherUser", runKey, "someone-else", nil},
		{"OwnerChanged", runKey, "owner-1", func(t *testing.T, store *db.DB) {
			if _, err := store.UpsertPlaybook(ctx, approval.SystemActor, "pb", "owner-2", runDef("v1")); err != nil {
				t.Fatal(err)
			}
		}},
		{"OwnerChangedNewOwner", runKey, "owner-2", func(t *testing.T, store *db.DB) {
			if _, err := store.UpsertPlaybook(ctx, approval.SystemActor, "pb", "owner-2", runDef("v1")); err != nil {
				t.Fatal(err)
			}
		}},
		{"Disabled", runKey, "owner-1", func(t *testing.T, store *db.DB) {
			if _, err := store.SetPlaybookState(ctx, approval.SystemActor, "", "pb", false, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"RevokedThenApprovedAgain", runKey, "owner-1", func(t *testing.T, store *db.DB) {
			var toolID int64
			if err := store.Pool.QueryRow(ctx, `SELECT id FROM tools WHERE name = 'pay'`).Scan(&toolID); err != nil {
				t.Fatal(err)
			}
			if err := store.RevokePreApproval(ctx, owner, "pb", toolID); err != nil {
				t.Fatal(err)
			}
			// A new pre-approval is not the one the run laid out.
			pb, err := store.UpsertPlaybook(ctx, approval.SystemActor, "pb", "owner-1", runDef("v1"))
			if err != nil {
				t.Fatal(err)
			}
			if n, err := store.PreApprove(ctx, owner, "pb", pb.Fingerprint); err != nil || n != 1 {
				t.Fatal(n, err)
			}
		}},
		{"PolicyChanged", runKey, "owner-1", func(t *testing.T, store *db.DB) {
			if _, err := store.SetToolPolicy(ctx, approval.SystemActor, "bank", "pay",
				approval.Policy{Mode: approval.ModeRequireApproval, Condition: "true"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"DefinitionChanged", runKey, "owner-1", func(t *testing.T, store *db.DB) {
			if _, err := store.UpsertPlaybook(ctx, approval.SystemActor, "pb", "owner-1", runDef("v2")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store, run := preapprovedRun(t)
			if o := checkInRun(t, store, runKey, "owner-1", run.ID, "c0"); o.Verdict != approval.Allow || o.Via != approval.ViaPreapproval {
				t.Fatalf("the normal case: %+v", o)
			}
			if tc.change != nil {
				tc.change(t, store)
			}
			if o := checkInRun(t, store, tc.key, tc.user, run.ID, "c1"); o.Verdict != approval.Deny || o.Code != approval.CodeApprovalUnavailable {
				t.Fatalf("want approval_unavailable, got %+v", o)
			}
			runs, err := store.RecentRuns(ctx, "pb", 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				if r.ID != run.ID {
					continue
				}
				var refused []db.RunCall
				for _, c := range r.Calls {
					if !c.Allowed() {
						refused = append(refused, c)
					}
				}
				if len(refused) != 1 || refused[0].CallID != "c1" {
					t.Fatalf("refusal not recorded on the run: %+v", r)
				}
			}
		})
	}
}
