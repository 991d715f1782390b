package gateway_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkAllowedCall measures what the gateway adds to a call the policy
// allows (a read-only tool): the same call made straight to the upstream
// and through the gateway, interleaved in the same run. It reports the p50
// and p99 of both and the p50 difference (target: under 2 ms).
//
//	go test ./gateway/ -run '^$' -bench AllowedCall -benchtime 500x
func BenchmarkAllowedCall(b *testing.B) {
	n := &notes{}
	h := start(b, n.inMemory())
	t, err := n.inMemory()()
	if err != nil {
		b.Fatal(err)
	}
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil).Connect(context.Background(), t, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	params := &mcp.CallToolParams{Name: "read_note", Arguments: json.RawMessage(`{"name":"todo"}`)}
	timed := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		r, err := cs.CallTool(context.Background(), params)
		d := time.Since(start)
		if err != nil || r.IsError {
			b.Fatalf("%v %v", err, r)
		}
		return d
	}
	// Warm both paths (connections, the server's prepared statements).
	for range 20 {
		timed(direct)
		timed(h.cs)
	}
	// The check alone, as the gateway makes it: what of the added time is
	// Countersign's answer (HTTP and one database transaction).
	c := client.New(h.e.BaseURL, h.e.APIKey())
	checked := func(i int) time.Duration {
		start := time.Now()
		out, err := c.Gate(context.Background(), client.Call{CallID: "bench-" + strconv.Itoa(i), User: dev.DemoMember.Subject,
			ConversationID: "bench", TurnID: "bench", Connector: "notes", Tool: "read_note", Arguments: `{"name":"todo"}`})
		d := time.Since(start)
		if err != nil || !out.Allowed {
			b.Fatalf("%+v %v", out, err)
		}
		return d
	}
	var viaDirect, viaGateway, check []time.Duration
	b.ResetTimer()
	for i := range b.N {
		viaDirect = append(viaDirect, timed(direct))
		viaGateway = append(viaGateway, timed(h.cs))
		check = append(check, checked(i))
	}
	b.StopTimer()
	c50, _ := percentiles(check)
	b.ReportMetric(float64(c50.Microseconds()), "check-p50-µs")
	d50, d99 := percentiles(viaDirect)
	g50, g99 := percentiles(viaGateway)
	b.ReportMetric(float64(d50.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(d99.Microseconds()), "direct-p99-µs")
	b.ReportMetric(float64(g50.Microseconds()), "gateway-p50-µs")
	b.ReportMetric(float64(g99.Microseconds()), "gateway-p99-µs")
	b.ReportMetric(float64((g50 - d50).Microseconds()), "added-p50-µs")
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*99/100]
}
