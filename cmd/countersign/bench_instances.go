package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/web"
)

// extraInstance starts one more instance in this process on the bench's
// database — its own pool, listener, sealer and HTTP server, as another
// process would have — and returns its base URL and a stop function.
func (b *benchServer) extraInstance(ctx context.Context) (string, *db.DB, func(), error) {
	store, err := db.Open(ctx, b.url)
	if err != nil {
		return "", nil, nil, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, _ := web.LoadConfig(func(string) string { return "" })
	cfg.DatabaseURL = b.url
	runCtx, cancel := context.WithCancel(context.Background())
	hub := db.NewHub(b.url, log)
	go hub.Run(runCtx)
	go store.RunSealer(runCtx, log, sealEvery)
	<-hub.Ready()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		store.Close()
		return "", nil, nil, err
	}
	base := "http://" + ln.Addr().String()
	cfg.BaseURL, _ = cfg.BaseURL.Parse(base)
	srv := web.New(web.Deps{Config: cfg, DB: store, Log: log, Hub: hub})
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(runCtx, ln) }()
	return base, store, func() { cancel(); <-done; store.Close() }, nil
}

// threeInstances runs the audited path with the runtimes spread over this
// instance and two more on the same database, then the audited path on
// this instance alone again (one), and compares the rate with the mean of
// one instance's before (single, from the same run) and after: the
// machine's drift during the three measurements cancels out. Last, one
// instance runs it once more with its write batches no larger than the
// three's mean: each of the three sees a third of the runtimes, so its
// batches carry a third as many checks per commit, and the comparison at
// the same size shows what is left for coordination to cost.
func (b *benchServer) threeInstances(ctx context.Context, workers int, d time.Duration, hc *http.Client, p checkPath,
	single rateResult, one func() (rateResult, error), stdout io.Writer) error {
	bases := []string{b.base}
	stores := []*db.DB{b.db}
	var stops []func()
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
		stops = nil
	}
	defer stopAll()
	for i := 0; i < 2; i++ {
		base, store, stop, err := b.extraInstance(ctx)
		if err != nil {
			return err
		}
		stops = append(stops, stop)
		bases = append(bases, base)
		stores = append(stores, store)
	}
	stats := func() (sum db.GroupStats) {
		for _, s := range stores {
			sum = sum.Plus(s.GroupStats())
		}
		return sum
	}
	before := stats()
	stopSampling := b.sampleWaits(ctx)
	three, err := measureRate(ctx, workers, d, func(ctx context.Context, w, i int) error {
		return b.checkOnceAt(ctx, hc, bases[w%len(bases)], p, i)
	})
	threeStats := stats().Since(before)
	groups := groupSizes(threeStats)
	samples, waits := stopSampling()
	if err != nil {
		return fmt.Errorf("three instances: %w", err)
	}
	stopAll()
	after, err := one()
	if err != nil {
		return fmt.Errorf("one instance again: %w", err)
	}
	// One instance again, its groups no larger than the three's: what one
	// instance does with only as many checks per commit as each of the
	// three gets tells the cost of coordination apart from that of the
	// smaller groups.
	size := 1
	if threeStats.WriteGroups > 0 {
		size = max(1, int(math.Round(float64(threeStats.Writes)/float64(threeStats.WriteGroups))))
	}
	b.db.LimitWriteGroups(size)
	limited, err := one()
	b.db.LimitWriteGroups(0)
	if err != nil {
		return fmt.Errorf("one instance with smaller groups: %w", err)
	}
	mean := (single.perSec() + after.perSec()) / 2
	r := three.perSec() / mean
	verdict := "FAIL"
	if r >= 0.9 && waits["Lock:advisory"] == 0 {
		verdict = "PASS"
	}
	fmt.Fprintf(stdout, "  %-44s %8.0f/s  p50 %8s  p99 %8s  %.2f× one instance  %s (≥0.9×, no advisory waits)\n",
		"audited check, 3 instances on one Postgres", three.perSec(), pct(three.lat, 50), pct(three.lat, 99), r, verdict)
	fmt.Fprintf(stdout, "  %-44s %s (the three together)\n", "", groups)
	fmt.Fprintf(stdout, "  %-44s one instance %.0f/s before and %.0f/s after, mean %.0f/s\n", "", single.perSec(), after.perSec(), mean)
	fmt.Fprintf(stdout, "  %-44s one instance last, at most %d checks a write batch (the three's mean): %.0f/s;\n", "",
		size, limited.perSec())
	fmt.Fprintf(stdout, "  %-44s %s\n", "", limited.groups)
	fmt.Fprintf(stdout, "  %-44s the three together are %.2f× that (what coordination costs, apart from the groups' size)\n", "",
		three.perSec()/limited.perSec())
	fmt.Fprintf(stdout, "  request backends waiting on an advisory lock, 3 instances: %d in %d samples\n", waits["Lock:advisory"], samples)
	fmt.Fprintf(stdout, "  busy backends, 3 instances (%d samples): %s\n", samples, topWaits(waits, 6))
	return nil
}
