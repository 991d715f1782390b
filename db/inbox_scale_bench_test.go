package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

// BenchmarkInboxManyPending measures a viewer's inbox list and count with
// 10,000 and with 100,000 calls waiting for other people and a few for the
// viewer, against the owner-only filter of before teams as the baseline,
// in the same run: Baseline is that filter; PredicateOnly asks
// countersign_may_decide of every waiting row; PendingFor and
// PendingCountFor are the product's reads, which take the viewer's rows of
// the maintained "who may decide" set first (pending_deciders).
func BenchmarkInboxManyPending(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("Waiting%d", n), func(b *testing.B) { benchInbox(b, n) })
	}
}

func benchInbox(b *testing.B, others int) {
	store, _ := testenv.OpenDB(b)
	ctx := context.Background()
	if err := store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: []db.ToolSync{{Name: "send", DisplayName: "Send"}}}); err != nil {
		b.Fatal(err)
	}
	if _, err := store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: "viewer", Name: "Viewer", Groups: []string{"finance"}}); err != nil {
		b.Fatal(err)
	}
	raw, _, err := store.CreateAPIKey(ctx, "runtime", nil)
	if err != nil {
		b.Fatal(err)
	}
	opt := db.CheckOptions{Timeout: time.Hour, DeniedThreshold: 2}
	res, _, err := store.CheckWithAPIKey(ctx, raw, db.CheckRequest{CallID: "c0", User: "viewer", ConversationID: "conv", TurnID: "t",
		Connector: "mail", Tool: "send", Arguments: `{"to":"a@example.com"}`}, opt)
	if err != nil || res.Approval == nil {
		b.Fatal(res.Outcome, err)
	}
	// others copies for others, 4 more for the viewer.
	if _, err := store.Pool.Exec(ctx, `INSERT INTO approvals (owner_subject, api_key_id, conversation_id, turn_id,
		call_id, tool_id, connector, tool, arguments_digest, arguments_size, preview, agent_reason, available_decisions,
		policy_version, expires_at)
		SELECT CASE WHEN g <= 4 THEN owner_subject ELSE 'other-' || (g % 500) END, api_key_id, conversation_id, turn_id,
			call_id || '-' || g, tool_id, connector, tool, arguments_digest, arguments_size, preview, agent_reason,
			available_decisions, policy_version, now() + interval '1 hour'
		FROM approvals, generate_series(1, $2::int + 4) g WHERE id = $1`, res.Approval.ID, others); err != nil {
		b.Fatal(err)
	}
	if _, err := store.Pool.Exec(ctx, `ANALYZE approvals, pending_deciders`); err != nil {
		b.Fatal(err)
	}
	count := func(b *testing.B, where string) {
		for b.Loop() {
			var n int
			if err := store.Pool.QueryRow(ctx, `SELECT count(*) FROM approvals a WHERE a.status = 'pending' AND a.expires_at > now() AND `+
				where, "viewer").Scan(&n); err != nil || n != 5 {
				b.Fatal(n, err)
			}
		}
	}
	b.Run("Baseline", func(b *testing.B) { count(b, `a.owner_subject = $1`) })
	b.Run("PredicateOnly", func(b *testing.B) { count(b, `countersign_may_decide(a, $1)`) })
	b.Run("PendingCountFor", func(b *testing.B) {
		for b.Loop() {
			if n, err := store.PendingCountFor(ctx, "viewer"); err != nil || n != 5 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("PendingFor", func(b *testing.B) {
		for b.Loop() {
			if list, err := store.PendingFor(ctx, "viewer"); err != nil || len(list) != 5 {
				b.Fatal(fmt.Sprint(len(list)), err)
			}
		}
	})
}
