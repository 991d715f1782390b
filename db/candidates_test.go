package db_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

// The inbox's candidate filter (mayDecideListSQL) narrows the rows before
// the one predicate and must never lose an item the predicate allows, nor
// add one it refuses: for every viewer, the inbox and its count are exactly
// the pending items countersign_may_decide allows — their own, a rule's
// team's, a team key's, an escalated item's backup team's, and those of
// someone who named them delegate.
func TestInboxCandidatesMatchThePredicate(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	stranger := f.signFinance(t, "zoe", "Zoe")
	f.leaveTeams(t, stranger)
	// Deploy: the owner decides, escalating to finance.
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "payments", "deploy", approval.Policy{Mode: approval.ModeRequireApproval,
		StandingApproval: true, Escalation: approval.Escalation{Team: "finance", After: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	small := f.ask(t, f.mayaKey, f.maya.Subject, "send", `{"amount": 5}`).Approval
	big := f.bigPayment(t)
	team := f.ask(t, f.platformKey, "", "deploy", `{"service": "api"}`).Approval
	mine := f.ask(t, f.mayaKey, f.maya.Subject, "deploy", `{"service": "web"}`).Approval
	escalated := f.ask(t, f.mayaKey, f.maya.Subject, "deploy", `{"service": "db"}`).Approval
	if _, err := f.store.Pool.Exec(ctx, `UPDATE approvals SET escalate_at = now() - interval '1 second' WHERE id = $1`, escalated.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.EscalateDue(ctx, 10); err != nil {
		t.Fatal(err)
	}
	// Sam stands in for Maya.
	f.delegate(t, f.maya, "sam@example.com")
	names := map[string]string{small.ID: "small", big.ID: "big", team.ID: "team", mine.ID: "mine", escalated.ID: "escalated"}
	want := map[string][]string{
		"maya":  {"escalated", "mine", "small", "team"},
		"finn":  {"big", "escalated"},
		"fiona": {"big", "escalated"},
		"sam":   {"escalated", "mine", "small", "team"},
		"zoe":   nil,
	}
	for _, u := range []db.User{f.maya, f.finn, f.fiona, f.sam, stranger} {
		list, err := f.store.PendingFor(ctx, u.Subject)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range list {
			got = append(got, names[a.ID])
		}
		slices.Sort(got)
		var byPredicate []string
		rows, err := f.store.Pool.Query(ctx, `SELECT id::text FROM approvals a WHERE status = 'pending' AND countersign_may_decide(a, $1)`, u.Subject)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			byPredicate = append(byPredicate, names[id])
		}
		rows.Close()
		slices.Sort(byPredicate)
		if fmt.Sprint(got) != fmt.Sprint(byPredicate) || fmt.Sprint(got) != fmt.Sprint(want[u.Subject]) {
			t.Errorf("%s's inbox %v, the predicate %v, want %v", u.Subject, got, byPredicate, want[u.Subject])
		}
		if n, err := f.store.PendingCountFor(ctx, u.Subject); err != nil || n != len(want[u.Subject]) {
			t.Errorf("%s's count %d %v, want %d", u.Subject, n, err, len(want[u.Subject]))
		}
	}
}

// Standing consent is the owner's alone, at the db level too: a member of
// the backup team of an escalated owner-rule item may approve it once, but
// an "Always allow" or "Allow in this conversation" of theirs is refused
// and makes no grant.
func TestStandingAnswerByNonOwnerRefused(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "payments", "deploy", approval.Policy{Mode: approval.ModeRequireApproval,
		StandingApproval: true, Escalation: approval.Escalation{Team: "finance", After: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	a := f.ask(t, f.mayaKey, f.maya.Subject, "deploy", `{"service": "db"}`).Approval
	if _, err := f.store.Pool.Exec(ctx, `UPDATE approvals SET escalate_at = now() - interval '1 second' WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.EscalateDue(ctx, 10); err != nil {
		t.Fatal(err)
	}
	for _, d := range []approval.Decision{approval.AlwaysAllow, approval.ApproveConversation} {
		_, err := f.store.Decide(ctx, a.ID, f.finn, d, "")
		if e := approval.AsError(err); e == nil || e.Kind != approval.KindUnprocessable || e.Code != approval.CodeNotOffered {
			t.Fatalf("Finn (backup team) answering %s: %v, want refused", d, err)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM standing_grants`); n != 0 {
		t.Fatalf("%d grants", n)
	}
	if got, err := f.store.Decide(ctx, a.ID, f.finn, approval.Approve, ""); err != nil || got.Status != approval.StatusApproved {
		t.Fatalf("Finn approving once: %v", err)
	}
}
