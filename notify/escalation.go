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

// peopleTold are the people a person's channel (mail, push) tells of ev:
// the members of an escalated item's backup team who may decide it, the
// people who may decide a new item (Deciders), nobody for other events.
func peopleTold(ctx context.Context, store *db.DB, ev db.NotificationEvent) ([]string, error) {
	switch {
	case escalated(ev):
		return store.EscalationRecipients(ctx, *ev.ApprovalID)
	case ev.Kind == db.EventApprovalRequested:
		return Deciders(ctx, store, ev)
	}
	return nil, nil
}

// asksDeciders says whether peopleTold asks Deciders about an item for ev
// (what a batch reads ahead, prepareBatch).
func asksDeciders(ev db.NotificationEvent) bool {
	return ev.Kind == db.EventApprovalRequested && ev.ApprovalID != nil && *ev.ApprovalID != ""
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
