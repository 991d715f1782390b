package db_test

import (
	"context"
	"slices"
	"testing"

	"github.com/countersign/countersign/approval"
)

// Standing grants past their end are each marked ended and audited once
// by the expiry sweep, and revoking a connector's grants revokes and
// audits each of them, however many there are.
func TestGrantsEndedAndRevokedTogether(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	var items []string
	for _, turn := range []string{"a", "b", "c"} {
		a, _ := f.pending(t, turn)
		items = append(items, a.ID)
	}
	for i, dec := range []approval.Decision{approval.AlwaysAllow, approval.AlwaysAllow, approval.ApproveConversation} {
		if _, err := f.store.Decide(ctx, items[i], f.user, dec, ""); err != nil {
			t.Fatal(err)
		}
	}
	grantsOf := func(ids ...string) []int64 {
		t.Helper()
		var out []int64
		if err := f.store.Pool.QueryRow(ctx, `SELECT array_agg(id ORDER BY id) FROM standing_grants WHERE approval_id::text = ANY($1)`, ids).
			Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	all, due := grantsOf(items...), grantsOf(items[0], items[2])
	if len(all) != 3 || len(due) != 2 {
		t.Fatalf("grants %v, due %v", all, due)
	}
	if _, err := f.store.Pool.Exec(ctx, `UPDATE standing_grants SET expires_at = now() - interval '1 second' WHERE id = ANY($1)`, due); err != nil {
		t.Fatal(err)
	}
	audited := func(action string) []int64 {
		t.Helper()
		var out []int64
		if err := f.store.Pool.QueryRow(ctx, `SELECT COALESCE(array_agg((detail->>'grant_id')::bigint ORDER BY (detail->>'grant_id')::bigint), '{}')
			FROM audit_events WHERE action = $1`, action).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for range 2 {
		if _, err := f.store.ExpireDue(ctx, 100); err != nil {
			t.Fatal(err)
		}
		if got := audited(approval.ActionGrantExpired); !slices.Equal(got, due) {
			t.Fatalf("grants audited as expired: %v, want %v once each", got, due)
		}
	}
	var ended []int64
	if err := f.store.Pool.QueryRow(ctx, `SELECT array_agg(id ORDER BY id) FROM standing_grants WHERE ended_at IS NOT NULL`).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ended, due) {
		t.Fatalf("grants marked ended: %v, want %v", ended, due)
	}
	n, err := f.store.RevokeConnectorGrants(ctx, f.user, "mail")
	if err != nil || n != 3 {
		t.Fatalf("revoked %d grants (%v), want 3", n, err)
	}
	if got := audited(approval.ActionGrantRevoked); !slices.Equal(got, all) {
		t.Fatalf("grants audited as revoked: %v, want %v", got, all)
	}
	var kinds []string
	if err := f.store.Pool.QueryRow(ctx, `SELECT array_agg(detail->>'kind' || ' ' || (detail->>'how') || ' ' || conversation_id ORDER BY id)
		FROM audit_events WHERE action = $1`, approval.ActionGrantRevoked).Scan(&kinds); err != nil {
		t.Fatal(err)
	}
	if want := []string{"always revoked with the connector ", "always revoked with the connector ", "conversation revoked with the connector conv"}; !slices.Equal(kinds, want) {
		t.Fatalf("revocation lines: %q, want %q", kinds, want)
	}
	if n, err := f.store.RevokeConnectorGrants(ctx, f.user, "mail"); err != nil || n != 0 {
		t.Fatalf("revoked again: %d (%v)", n, err)
	}
}
