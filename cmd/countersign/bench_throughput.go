package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The paths' goals, each a ratio to its floor measured in turns with it.
const (
	goalPolicy  = 0.50 // × the one-select limit
	goalGrant   = 0.40 // × single-row commits
	goalPending = 0.80 // × commits with NOTIFY
)

// analyzedTables are the tables the checks fill during a run.
const analyzedTables = `approvals, pending_deciders, approval_arguments, audit_events, notification_events`

// settled waits until every audit line is sealed and every outbox event
// planned (drained), then analyzes the tables the checks filled (analyze).
func (b *benchServer) settled(ctx context.Context) error {
	if err := b.drained(ctx); err != nil {
		return err
	}
	return b.analyze(ctx)
}

// drained waits until every audit line is sealed and every outbox event
// planned: what a measurement leaves for the background to do.
func (b *benchServer) drained(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var busy bool
		err := b.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM audit_unsealed)
			OR EXISTS (SELECT 1 FROM notification_events WHERE planned_at IS NULL)`).Scan(&busy)
		if err != nil {
			return fmt.Errorf("waiting for the sealer and the notifications: %w", err)
		}
		if !busy {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// analyze analyzes the tables the checks fill, as autovacuum does for a
// database in use: the run's database is new, and a table of thousands of
// rows that Postgres believes nearly empty is planned as no production
// database is. Measured: without it, the "same call already pending"
// look-up of each check is planned on the owner's index of waiting items
// and reads every one of them (Postgres's default guesses for a column
// without statistics make both indexes look like one row), so the pending
// path slows as it runs — 526 checks a second over 12 s, against 1,422
// with the tables analyzed every 2 s.
func (b *benchServer) analyze(ctx context.Context) error {
	_, err := b.db.Pool.Exec(ctx, `ANALYZE `+analyzedTables)
	return err
}

// turns is how alternate counts the turns of a path: after each, what
// the turn left behind is drained and counted with it (its CPU and time),
// and the tables are analyzed outside the count — autovacuum analyzes a
// database in use now and then, not after every second of checks.
func (b *benchServer) turns() turnCount {
	return turnCount{drain: b.drained, tidy: b.analyze, cpu: b.cpuNow}
}

// throughput measures, in one run, the floors (the HTTP stack alone,
// Postgres commits alone, commits with NOTIFY) and the check's three paths
// against them, each with concurrent runtimes.
func (b *benchServer) throughput(ctx context.Context, workers int, d time.Duration, stdout io.Writer) error {
	floors, err := newFloorPool(ctx, b.url, workers)
	if err != nil {
		return err
	}
	defer floors.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2, MaxConnsPerHost: workers * 2}}
	paths, err := b.prepareCheckPaths(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Throughput, %d concurrent runtimes, %s per measurement\n", workers, d)
	f, err := b.measureFloors(ctx, workers, d, hc, floors, stdout)
	if err != nil {
		return err
	}
	check := func(p checkPath) (rateResult, error) { return b.measureCheck(ctx, workers, d, hc, p) }
	// Each path is measured in turns with its floor (alternate): on a
	// shared machine a floor measured a minute earlier says little.
	one, err := startOneSelect(floors)
	if err != nil {
		return err
	}
	defer one.close()
	before := b.db.GroupStats()
	policy, oneAlong, err := alternate(ctx, workers, d, alternations, func(ctx context.Context, _, i int) error {
		return b.checkOnce(ctx, hc, paths[0], i)
	}, func(ctx context.Context, _, _ int) error { return one.once(ctx, hc, b.key) }, b.turns(), "one-select limit")
	policy.groups = groupSizes(b.db.GroupStats().Since(before))
	if err != nil {
		return fmt.Errorf("allowed by policy: %w", err)
	}
	pr := policy.perSec() / oneAlong.perSec()
	rateRow(stdout, "check allowed by policy", policy, fmt.Sprintf("%.2f× one-select (%.2f× healthz)  %s (≥%.2f×, p99 ≤10ms)",
		pr, policy.perSec()/f.health.perSec(), passFail(pr >= goalPolicy && pctD(policy.lat, 99) <= 10*time.Millisecond), goalPolicy))
	fmt.Fprintf(stdout, "  %-44s one-select limit %.0f/s in turns with it, %d×%s each (%.0f/s at the start)\n", "",
		oneAlong.perSec(), alternations, d/alternations, f.one.perSec())
	cpuRow(stdout, policy.cpu, oneAlong.cpu, "one-select", oneAlong.perSec(), goalPolicy, runtime.NumCPU())
	stopUnsealed := b.sampleUnsealed(ctx)
	stopSampling := b.sampleWaits(ctx)
	before = b.db.GroupStats()
	grant, commitsAlong, err := alternate(ctx, workers, d, alternations, func(ctx context.Context, _, i int) error {
		return b.checkOnce(ctx, hc, paths[1], i)
	}, f.commit, b.turns(), "commits")
	grant.groups = groupSizes(b.db.GroupStats().Since(before))
	samples, waits := stopSampling()
	if err != nil {
		return fmt.Errorf("allowed by a grant: %w", err)
	}
	gr := grant.perSec() / commitsAlong.perSec()
	rateRow(stdout, "check allowed by \"Always allow\" (audited)", grant, fmt.Sprintf("%.2f× commits  %s (≥%.2f×)", gr, passFail(gr >= goalGrant), goalGrant))
	fmt.Fprintf(stdout, "  %-44s commits %.0f/s in turns with it, %d×%s each (%.0f/s at the start)\n", "",
		commitsAlong.perSec(), alternations, d/alternations, f.commits.perSec())
	cpuRow(stdout, grant.cpu, commitsAlong.cpu, "a commit", commitsAlong.perSec(), goalGrant, runtime.NumCPU())
	// Three instances run the same path next, on the database as one
	// instance left it: before the pending run adds thousands of waiting
	// items that both would otherwise not have seen alike.
	if err := b.threeInstances(ctx, workers, d, hc, paths[1], grant, func() (rateResult, error) { return check(paths[1]) }, stdout); err != nil {
		return err
	}
	p, err := b.measurePending(ctx, workers, d, hc, paths[2], f.notify)
	window := stopUnsealed()
	if err != nil {
		return fmt.Errorf("creating a pending item: %w", err)
	}
	reportPending(stdout, d, f, p)
	fmt.Fprintf(stdout, "  request backends waiting on an advisory lock during the audited run: %d in %d samples\n", waits["Lock:advisory"], samples)
	fmt.Fprintf(stdout, "  busy backends, audited run (%d samples): %s\n", samples, topWaits(waits, 6))
	fmt.Fprintf(stdout, "  busy backends, pending run and the sealer's catching up after its turns (%d samples): %s\n", p.samples, topWaits(p.waits, 6))
	fmt.Fprintf(stdout, "  unsealed audit window during the audited runs and the pending run: at most %s  %s (<1s)\n",
		window.Round(time.Millisecond), passFail(window < time.Second))
	fmt.Fprintln(stdout)
	return nil
}

// rateRow prints one measurement: its rate, its latencies, extra (the
// comparison and the verdict) and, for checks, the group sizes.
func rateRow(stdout io.Writer, name string, r rateResult, extra string) {
	fmt.Fprintf(stdout, "  %-44s %8.0f/s  p50 %8s  p99 %8s  %s\n", name, r.perSec(), pct(r.lat, 50), pct(r.lat, 99), extra)
	if r.groups != "" {
		fmt.Fprintf(stdout, "  %-44s %s\n", "", r.groups)
	}
}

// passFail is a target's verdict.
func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// floorRates are the floors the check's paths are compared with.
type floorRates struct {
	health, ready, commits, notifies rateResult
	// one is the one-select limit (oneSelect).
	one rateResult
	// commit is one single-row commit and notify one commit with NOTIFY:
	// measured again in turns with the audited and the pending runs.
	commit, notify runOnce
}

// measureFloors measures the HTTP stack alone, one Postgres round trip
// behind it, Postgres commits alone and commits with NOTIFY.
func (b *benchServer) measureFloors(ctx context.Context, workers int, d time.Duration, hc *http.Client, floors *pgxpool.Pool, stdout io.Writer) (floorRates, error) {
	var f floorRates
	var err error
	f.health, err = measureRate(ctx, workers, d, func(ctx context.Context, _, _ int) error { return getOK(ctx, hc, b.base+"/healthz") })
	if err != nil {
		return f, fmt.Errorf("healthz: %w", err)
	}
	rateRow(stdout, "GET /healthz (HTTP stack alone)", f.health, "floor")
	f.ready, err = measureRate(ctx, workers, d, func(ctx context.Context, _, _ int) error { return getReady(ctx, hc, b.base+"/readyz") })
	if err != nil {
		return f, fmt.Errorf("readyz: %w", err)
	}
	rateRow(stdout, "GET /readyz (HTTP + one Postgres round trip)", f.ready, fmt.Sprintf("floor, %.2f× healthz", f.ready.perSec()/f.health.perSec()))
	one, err := startOneSelect(floors)
	if err != nil {
		return f, err
	}
	defer one.close()
	f.one, err = measureRate(ctx, workers, d, func(ctx context.Context, _, _ int) error { return one.once(ctx, hc, b.key) })
	if err != nil {
		return f, fmt.Errorf("one-select limit: %w", err)
	}
	rateRow(stdout, "one-select limit (net/http + JSON + 1 SELECT)", f.one, fmt.Sprintf("floor, %.2f× healthz", f.one.perSec()/f.health.perSec()))
	f.commit = func(ctx context.Context, _, i int) error {
		_, err := floors.Exec(ctx, `INSERT INTO bench_commits (v) VALUES ($1)`, strconv.Itoa(i))
		return err
	}
	f.commits, err = measureRate(ctx, workers, d, f.commit)
	if err != nil {
		return f, fmt.Errorf("commits: %w", err)
	}
	rateRow(stdout, "single-row INSERT commits (Postgres alone)", f.commits, "floor")
	f.notify = func(ctx context.Context, _, i int) error {
		_, err := floors.Exec(ctx, `WITH i AS (INSERT INTO bench_commits (v) VALUES ($1) RETURNING id)
			SELECT pg_notify('countersign_bench', id::text) FROM i`, strconv.Itoa(i))
		return err
	}
	f.notifies, err = measureRate(ctx, workers, d, f.notify)
	if err != nil {
		return f, fmt.Errorf("commits with notify: %w", err)
	}
	rateRow(stdout, "single-row INSERT + pg_notify commits", f.notifies, "floor")
	return f, nil
}

// measureCheck measures checks of path p, with the group sizes they were
// sent in.
func (b *benchServer) measureCheck(ctx context.Context, workers int, d time.Duration, hc *http.Client, p checkPath) (rateResult, error) {
	before := b.db.GroupStats()
	r, err := measureRate(ctx, workers, d, func(ctx context.Context, _, i int) error {
		return b.checkOnce(ctx, hc, p, i)
	})
	r.groups = groupSizes(b.db.GroupStats().Since(before))
	return r, err
}

// pendingRun is the pending path measured in turns with the NOTIFY floor,
// and the backends' waits sampled meanwhile.
type pendingRun struct {
	pending, notifiesAlong rateResult
	samples                int
	waits                  map[string]int
}

// measurePending measures checks of path p (one creating a pending item).
// It is compared with the NOTIFY floor measured in turns with it
// (alternations turns each): this machine's rates drift within a minute
// (the same floor has measured 1,345/s and 3,599/s in runs minutes apart),
// and the floor at the run's start was measured a minute earlier.
func (b *benchServer) measurePending(ctx context.Context, workers int, d time.Duration, hc *http.Client, p checkPath, notify runOnce) (pendingRun, error) {
	var r pendingRun
	// A first turn, not counted, leaves waiting items to analyze (settled):
	// the measured turns see tables with statistics, as after a minute of
	// use. Without it the first turn would run on a new database's
	// guesses.
	if _, err := measureRate(ctx, workers, d/alternations, func(ctx context.Context, _, i int) error {
		return b.checkOnce(ctx, hc, p, i)
	}); err != nil {
		return r, err
	}
	if err := b.settled(ctx); err != nil {
		return r, err
	}
	stopSampling := b.sampleWaits(ctx)
	before := b.db.GroupStats()
	var err error
	r.pending, r.notifiesAlong, err = alternate(ctx, workers, d, alternations, func(ctx context.Context, _, i int) error {
		return b.checkOnce(ctx, hc, p, i)
	}, notify, b.turns(), "commits with notify")
	r.pending.groups = groupSizes(b.db.GroupStats().Since(before))
	r.samples, r.waits = stopSampling()
	return r, err
}

// reportPending prints the pending path against the NOTIFY floor measured
// in turns with it.
func reportPending(stdout io.Writer, d time.Duration, f floorRates, p pendingRun) {
	nr := p.pending.perSec() / p.notifiesAlong.perSec()
	rateRow(stdout, "check creating a pending item", p.pending, fmt.Sprintf("%.2f× commits+NOTIFY  %s (≥%.2f×)", nr, passFail(nr >= goalPending), goalPending))
	fmt.Fprintf(stdout, "  %-44s commits+NOTIFY %.0f/s in turns with it, %d×%s each (%.0f/s at the start)\n", "",
		p.notifiesAlong.perSec(), alternations, d/alternations, f.notifies.perSec())
	cpuRow(stdout, p.pending.cpu, p.notifiesAlong.cpu, "a commit+NOTIFY", p.notifiesAlong.perSec(), goalPending, runtime.NumCPU())
}

// floorApp names the floors' connections (application_name).
const floorApp = "countersign-bench-floor"

func newFloorPool(ctx context.Context, url string, workers int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(workers)
	// Named, so that the wait samples leave the floor's backends out.
	cfg.ConnConfig.RuntimeParams["application_name"] = floorApp
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := p.Exec(ctx, `CREATE UNLOGGED TABLE IF NOT EXISTS bench_commits (id bigserial PRIMARY KEY, v text NOT NULL)`); err != nil {
		p.Close()
		return nil, err
	}
	// A logged table, as the product's tables are: the floor includes WAL flushes.
	if _, err := p.Exec(ctx, `ALTER TABLE bench_commits SET LOGGED`); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}
