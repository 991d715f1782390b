package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

// startedRun registers a playbook using one tool that policy allows,
// enables it and starts a run.
func startedRun(t *testing.T) (*db.DB, db.Run) {
	t.Helper()
	ctx := context.Background()
	store, _ := testenv.OpenDB(t)
	readOnly := true
	if err := store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "crm", DisplayName: "CRM", Kind: "connector",
		Tools: []db.ToolSync{{Name: "read", DisplayName: "Read", Annotations: approval.Annotations{ReadOnlyHint: &readOnly}}}}); err != nil {
		t.Fatal(err)
	}
	def := approval.Definition{Name: "Report", Steps: []approval.Step{{ID: "s", Title: "S", WorkType: approval.WorkType{ID: "w", Version: "1"},
		Tools: []approval.Pair{{Connector: "crm", Tool: "read"}}}}}
	if _, err := store.UpsertPlaybook(ctx, approval.SystemActor, "pb", "owner-1", def); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetPlaybookState(ctx, approval.SystemActor, "", "pb", true, nil); err != nil {
		t.Fatal(err)
	}
	run, err := store.StartRun(ctx, db.APIKey{ID: 1, Name: "runtime"}, "pb")
	if err != nil {
		t.Fatal(err)
	}
	return store, run
}

// A stored value the page cannot read is an error, never a run shown with
// its refusals silently dropped.
func TestRecentRunsUnreadable(t *testing.T) {
	ctx := context.Background()
	store, run := startedRun(t)
	if _, err := store.Pool.Exec(ctx, `INSERT INTO playbook_run_refusals (run_id, tool_id, call_id, code)
		SELECT $1::uuid, id, 'c1', 'approval_unavailable' FROM tools`, run.ID); err != nil {
		t.Fatal(err)
	}
	runs, err := store.RecentRuns(ctx, "pb", 10)
	if err != nil || len(runs) != 1 || len(runs[0].Calls) != 1 {
		t.Fatalf("readable refusal: %v %+v", err, runs)
	}
	if _, err := store.Pool.Exec(ctx, `UPDATE playbook_run_refusals SET refused_at = 'infinity'`); err != nil {
		t.Fatal(err)
	}
	if runs, err := store.RecentRuns(ctx, "pb", 10); err == nil {
		t.Fatalf("an unreadable refusal was dropped without an error: %+v", runs)
	}
}

// A refused start's stored pairs that cannot be read are an error too.
func TestRecentRunsUnreadableRefusedPairs(t *testing.T) {
	ctx := context.Background()
	store, run := startedRun(t)
	if _, err := store.Pool.Exec(ctx, `UPDATE playbook_runs SET refused_code = 'PLAYBOOK_TOOL_APPROVAL_REQUIRED',
		refused_pairs = '[{"connector": 1}]' WHERE id = $1::uuid`, run.ID); err != nil {
		t.Fatal(err)
	}
	if runs, err := store.RecentRuns(ctx, "pb", 10); err == nil {
		t.Fatalf("unreadable refused pairs were read without an error: %+v", runs)
	}
}

// A refused start commits its run and audit line although the start fails.
func TestStartRunRefusedIsRecorded(t *testing.T) {
	ctx := context.Background()
	store, _ := startedRun(t)
	if _, err := store.SetPlaybookState(ctx, approval.SystemActor, "", "pb", false, nil); err != nil {
		t.Fatal(err)
	}
	_, err := store.StartRun(ctx, db.APIKey{ID: 1, Name: "runtime"}, "pb")
	var refused *db.RunRefusedError
	if !errors.As(err, &refused) || approval.AsError(err) == nil || approval.AsError(err).Code != approval.CodePlaybookDisabled {
		t.Fatalf("want a recorded playbook_disabled refusal, got %v", err)
	}
	runs, err := store.RecentRuns(ctx, "pb", 10)
	if err != nil || len(runs) != 2 || runs[0].ID != refused.RunID || runs[0].RefusedCode != approval.CodePlaybookDisabled || runs[1].RefusedCode != "" {
		t.Fatalf("runs %+v %v", runs, err)
	}
	var lines int
	if err := store.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = $1 AND run_id = $2`,
		approval.ActionRunRefused, refused.RunID).Scan(&lines); err != nil || lines != 1 {
		t.Fatalf("%d audit lines for the refused start (%v)", lines, err)
	}
}
