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

// A grant's use is noted at its first use and then at most once a minute,
// whichever statement read it.
func TestGrantUseNotedOncePerMinute(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	a, _ := f.pending(t, "a")
	if _, err := f.store.Decide(ctx, a.ID, f.user, approval.AlwaysAllow, ""); err != nil {
		t.Fatal(err)
	}
	raw, _, err := f.store.CreateAPIKey(ctx, "second", nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	use := func() {
		t.Helper()
		n++
		res, _, err := f.store.CheckWithAPIKey(ctx, raw, db.CheckRequest{CallID: fmt.Sprint("u", n), User: f.user.Subject,
			ConversationID: "conv", TurnID: fmt.Sprint("t", n), Connector: "mail", Tool: "send_email", Arguments: `{"x":1}`},
			db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
		if err != nil || res.Outcome.Via != approval.ViaAlwaysAllow {
			t.Fatalf("use %d: %v %+v", n, err, res.Outcome)
		}
	}
	lastUsed := func() *time.Time {
		t.Helper()
		var at *time.Time
		if err := f.store.Pool.QueryRow(ctx, `SELECT last_used_at FROM standing_grants WHERE approval_id::text = $1`, a.ID).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	if lastUsed() != nil {
		t.Fatal("used before its first use")
	}
	use() // the first check of the tool reads its facts apart, the next ones in their first statement
	first := lastUsed()
	if first == nil {
		t.Fatal("first use not noted")
	}
	use()
	use()
	if again := lastUsed(); again == nil || !again.Equal(*first) {
		t.Fatalf("noted again within a minute: %v, then %v", first, again)
	}
	if _, err := f.store.Pool.Exec(ctx, `UPDATE standing_grants SET last_used_at = last_used_at - interval '2 minutes' WHERE approval_id::text = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	use()
	if later := lastUsed(); later == nil || !later.After(*first) {
		t.Fatalf("not noted after a minute: %v, then %v", first, later)
	}
}
