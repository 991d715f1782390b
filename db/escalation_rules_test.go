package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
)

// The escalation itself (EscalateDue, called directly, not through the
// sweep's timing) escalates an item only once its escalate_at has come and
// only while it has not expired: the expiry wins.
func TestEscalateDueOnlyWhenDueAndLive(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "payments", "send", approval.Policy{Mode: approval.ModeRequireApproval,
		StandingApproval: true, Rule: approval.DeciderRule{Deciders: approval.DecidersQuorum, Team: "finance", Quorum: 2},
		DecidersCondition: "args.amount > 10000", Escalation: approval.Escalation{Team: "platform", After: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	notYet, expired, due := f.bigPayment(t), f.bigPayment(t), f.bigPayment(t)
	for id, q := range map[string]string{
		notYet.ID:  `UPDATE approvals SET escalate_at = now() + interval '1 minute' WHERE id = $1`,
		expired.ID: `UPDATE approvals SET escalate_at = now() - interval '1 minute', expires_at = now() - interval '1 second' WHERE id = $1`,
		due.ID:     `UPDATE approvals SET escalate_at = now() - interval '1 second' WHERE id = $1`,
	} {
		if _, err := f.store.Pool.Exec(ctx, q, id); err != nil {
			t.Fatal(err)
		}
	}
	n, err := f.store.EscalateDue(ctx, 10)
	if err != nil || n != 1 {
		t.Fatalf("escalated %d %v, want 1", n, err)
	}
	got := map[string]bool{}
	for _, id := range []string{notYet.ID, expired.ID, due.ID} {
		got[id] = f.count(t, `SELECT count(*) FROM approvals WHERE id = $1 AND escalated_at IS NOT NULL`, id) == 1
	}
	if got[notYet.ID] || got[expired.ID] || !got[due.ID] {
		t.Fatalf("escalated: before escalate_at %v, expired %v, due %v", got[notYet.ID], got[expired.ID], got[due.ID])
	}
	if n := f.count(t, `SELECT count(*) FROM audit_events WHERE action = $1`, approval.ActionEscalated); n != 1 {
		t.Fatalf("%d escalation lines", n)
	}
}

// The people told of an escalation are the backup team's members who may
// decide the item: Maya, on the backup team (platform) but the owner of a
// two-person item, is excluded from its quorum and is not told; Sam is.
func TestEscalationRecipientsExcludeOwnerOfQuorum(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	a := f.escalatedPayment(t)
	got, err := f.store.EscalationRecipients(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[sam]" {
		t.Fatalf("escalation recipients %v, want [sam] (Maya owns the two-person item)", got)
	}
}
