package db_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

// BenchmarkCheckAllowedByPolicy measures the database side of a check its
// policy allows, with the key authenticated first and then the check (two
// round trips), and with the key authenticated in the check's own batch
// (one), in the same run: compare the two.
func BenchmarkCheckAllowedByPolicy(b *testing.B) {
	store, _ := testenv.OpenDB(b)
	ctx := context.Background()
	if err := store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: []db.ToolSync{{Name: "search", DisplayName: "Search"}}}); err != nil {
		b.Fatal(err)
	}
	if _, err := store.SetToolPolicy(ctx, approval.SystemActor, "mail", "search", approval.Policy{Mode: approval.ModeAllow}); err != nil {
		b.Fatal(err)
	}
	raw, _, err := store.CreateAPIKey(ctx, "runtime", nil)
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	req := func() db.CheckRequest {
		id := fmt.Sprint(n.Add(1))
		return db.CheckRequest{CallID: id, User: "member", ConversationID: "conv", TurnID: "t" + id, Connector: "mail", Tool: "search",
			Arguments: `{"query":"invoices"}`}
	}
	opt := db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2}
	b.Run("AuthThenCheck", func(b *testing.B) {
		b.SetParallelism(8) // 16 concurrent on two cores
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				key, err := store.AuthenticateAPIKey(ctx, raw)
				if err != nil {
					b.Fatal(err)
				}
				if res, err := store.Check(ctx, key, req(), opt); err != nil || res.Outcome.Via != approval.ViaPolicy {
					b.Fatal(res.Outcome, err)
				}
			}
		})
	})
	b.Run("AuthInCheck", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if res, _, err := store.CheckWithAPIKey(ctx, raw, req(), opt); err != nil || res.Outcome.Via != approval.ViaPolicy {
					b.Fatal(res.Outcome, err)
				}
			}
		})
	})
}
