package notify

import (
	"context"

	"github.com/countersign/countersign/db"
)

// escalated reports whether ev is an escalation: its people are the
// backup team's members, not the item's owner.
func escalated(ev db.NotificationEvent) bool {
	return ev.Kind == db.EventApprovalEscalated && ev.ApprovalID != nil
}

// escalationTargets are the members of an escalated item's backup team who
// may decide it, each turned into targets by each (their address, their
// devices), as a new item's owner would be.
func escalationTargets(ctx context.Context, store *db.DB, ev db.NotificationEvent, each func(subject string) ([]Target, error)) ([]Target, error) {
	members, err := store.EscalationRecipients(ctx, *ev.ApprovalID)
	if err != nil {
		return nil, err
	}
	return targetsOf(members, each)
}

// targetsOf turns each of people into their targets (their address, their
// devices).
func targetsOf(people []string, each func(subject string) ([]Target, error)) ([]Target, error) {
	var out []Target
	for _, p := range people {
		ts, err := each(p)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	return out, nil
}
