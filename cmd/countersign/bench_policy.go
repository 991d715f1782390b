package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/countersign/countersign/approval"
)

// policyPropagation changes a tool's policy directly in the database (as
// another instance would) and checks through this server right after the
// commit: with no policy cache, every first check must see the change.
func (b *benchServer) policyPropagation(ctx context.Context, trials int, stdout io.Writer) error {
	var honoured int
	var lat []time.Duration
	modes := []approval.Mode{approval.ModeBlock, approval.ModeAllow}
	for i := 0; i < trials; i++ {
		mode := modes[i%2]
		if _, err := b.db.SetToolPolicy(ctx, approval.SystemActor, "mail", "search_messages", approval.Policy{Mode: mode, StandingApproval: true}); err != nil {
			return err
		}
		call := b.nextCall()
		call.Tool = "search_messages"
		start := time.Now()
		var res struct {
			Decision string `json:"decision"`
		}
		if err := doJSON(ctx, b.base, b.key, http.MethodPost, "/api/v1/tool-calls", call, &res); err != nil {
			return err
		}
		lat = append(lat, time.Since(start))
		if (mode == approval.ModeBlock) == (res.Decision == "deny") {
			honoured++
		}
	}
	fmt.Fprintln(stdout, "Policy change on another instance → next check here")
	fmt.Fprintf(stdout, "  honoured by the first check after the commit: %d of %d (no policy cache: every check reads the current version)\n", honoured, trials)
	fmt.Fprintf(stdout, "  check latency p50 %s  p99 %s\n\n", pct(lat, 50), pct(lat, 99))
	return nil
}
