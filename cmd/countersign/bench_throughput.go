package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/jackc/pgx/v5/pgxpool"
)

// runOnce is one operation of a throughput measurement, by worker w.
type runOnce func(ctx context.Context, w, i int) error

// rateResult is what a throughput measurement saw.
type rateResult struct {
	n      int
	el     time.Duration
	lat    []time.Duration
	groups string // the checks' mean group sizes (groupSizes), if any
}

// groupSizes says how many group statements an instance sent in d (a
// difference of db.GroupStats) and how many checks each carried on average.
func groupSizes(d db.GroupStats) string {
	per := func(checks, groups int64) string {
		if groups == 0 {
			return "none"
		}
		return fmt.Sprintf("%.1f checks each", float64(checks)/float64(groups))
	}
	return fmt.Sprintf("reads: %d statements, %s; writes: %d batches, %s", d.ReadGroups, per(d.Reads, d.ReadGroups),
		d.WriteGroups, per(d.Writes, d.WriteGroups))
}

func (r rateResult) perSec() float64 { return float64(r.n) / r.el.Seconds() }

// measureRate runs op from workers goroutines for d (after a short warm-up
// that is not counted) and returns the completed operations and their
// latencies. The first error stops the measurement.
func measureRate(ctx context.Context, workers int, d time.Duration, op runOnce) (rateResult, error) {
	var seq atomic.Int64
	run := func(d time.Duration, keep bool) (rateResult, error) {
		var mu sync.Mutex
		var res rateResult
		var firstErr error
		deadline := time.Now().Add(d)
		start := time.Now()
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				var lat []time.Duration
				var err error
				for time.Now().Before(deadline) && ctx.Err() == nil {
					t0 := time.Now()
					if err = op(ctx, w, int(seq.Add(1))); err != nil {
						break
					}
					lat = append(lat, time.Since(t0))
				}
				mu.Lock()
				defer mu.Unlock()
				res.n += len(lat)
				if keep {
					res.lat = append(res.lat, lat...)
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
			}(w)
		}
		wg.Wait()
		res.el = time.Since(start)
		return res, firstErr
	}
	if _, err := run(d/8, false); err != nil {
		return rateResult{}, err
	}
	return run(d, true)
}

// alternations is how many turns each of two alternated measurements
// takes (alternate).
const alternations = 4

// alternate measures a and b in turns, slices times each for d/slices,
// and returns each one's slices together: both see the machine as it is
// during adjacent seconds, so its drift falls on both alike. The turns go
// a b, b a, a b, ...: a steady drift favours neither. After each turn of
// a, settle waits for the work a left behind (sealing its audit lines,
// planning its notifications), so that b's turn does not carry it. errB
// names a failure of b.
func alternate(ctx context.Context, workers int, d time.Duration, slices int, a, b runOnce,
	settle func(context.Context) error, errB string) (ra, rb rateResult, err error) {
	add := func(sum *rateResult, op runOnce) error {
		r, err := measureRate(ctx, workers, d/time.Duration(slices), op)
		sum.n, sum.el, sum.lat = sum.n+r.n, sum.el+r.el, append(sum.lat, r.lat...)
		return err
	}
	turnA := func() error {
		if err := add(&ra, a); err != nil {
			return err
		}
		return settle(ctx)
	}
	turnB := func() error {
		if err := add(&rb, b); err != nil {
			return fmt.Errorf("%s: %w", errB, err)
		}
		return nil
	}
	for i := range slices {
		first, second := turnA, turnB
		if i%2 == 1 {
			first, second = turnB, turnA
		}
		if err := first(); err != nil {
			return ra, rb, err
		}
		if err := second(); err != nil {
			return ra, rb, err
		}
	}
	return ra, rb, nil
}

// settled waits until every audit line is sealed and every outbox event
// planned: what a measurement leaves for the background to do.
func (b *benchServer) settled(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var busy bool
		err := b.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM audit_events WHERE seq IS NULL)
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
	row := func(name string, r rateResult, extra string) {
		fmt.Fprintf(stdout, "  %-44s %8.0f/s  p50 %8s  p99 %8s  %s\n", name, r.perSec(), pct(r.lat, 50), pct(r.lat, 99), extra)
		if r.groups != "" {
			fmt.Fprintf(stdout, "  %-44s %s\n", "", r.groups)
		}
	}
	health, err := measureRate(ctx, workers, d, func(ctx context.Context, _, _ int) error { return getOK(ctx, hc, b.base+"/healthz") })
	if err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	row("GET /healthz (HTTP stack alone)", health, "floor")
	ready, err := measureRate(ctx, workers, d, func(ctx context.Context, _, _ int) error { return getReady(ctx, hc, b.base+"/readyz") })
	if err != nil {
		return fmt.Errorf("readyz: %w", err)
	}
	row("GET /readyz (HTTP + one Postgres round trip)", ready, fmt.Sprintf("floor, %.2f× healthz", ready.perSec()/health.perSec()))
	commits, err := measureRate(ctx, workers, d, func(ctx context.Context, _, i int) error {
		_, err := floors.Exec(ctx, `INSERT INTO bench_commits (v) VALUES ($1)`, strconv.Itoa(i))
		return err
	})
	if err != nil {
		return fmt.Errorf("commits: %w", err)
	}
	row("single-row INSERT commits (Postgres alone)", commits, "floor")
	notify := func(ctx context.Context, _, i int) error {
		_, err := floors.Exec(ctx, `WITH i AS (INSERT INTO bench_commits (v) VALUES ($1) RETURNING id)
			SELECT pg_notify('countersign_bench', id::text) FROM i`, strconv.Itoa(i))
		return err
	}
	notifies, err := measureRate(ctx, workers, d, notify)
	if err != nil {
		return fmt.Errorf("commits with notify: %w", err)
	}
	row("single-row INSERT + pg_notify commits", notifies, "floor")

	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	check := func(p checkPath) (rateResult, error) {
		before := b.db.GroupStats()
		r, err := measureRate(ctx, workers, d, func(ctx context.Context, _, i int) error {
			return b.checkOnce(ctx, hc, p, i)
		})
		r.groups = groupSizes(b.db.GroupStats().Since(before))
		return r, err
	}
	policy, err := check(paths[0])
	if err != nil {
		return fmt.Errorf("allowed by policy: %w", err)
	}
	pr := policy.perSec() / health.perSec()
	row("check allowed by policy", policy, fmt.Sprintf("%.2f× healthz (%.2f× readyz)  %s (≥5000/s, ≥0.30×, p99 ≤10ms)",
		pr, policy.perSec()/ready.perSec(), verdict(policy.perSec() >= 5000 && pr >= 0.30 && pctD(policy.lat, 99) <= 10*time.Millisecond)))
	stopUnsealed := b.sampleUnsealed(ctx)
	stopSampling := b.sampleWaits(ctx)
	grant, err := check(paths[1])
	samples, waits := stopSampling()
	if err != nil {
		return fmt.Errorf("allowed by a grant: %w", err)
	}
	gr := grant.perSec() / commits.perSec()
	row("check allowed by \"Always allow\" (audited)", grant, fmt.Sprintf("%.2f× commits  %s (≥0.20×)", gr, verdict(gr >= 0.20)))
	// Three instances run the same path next, on the database as one
	// instance left it: before the pending run adds thousands of waiting
	// items that both would otherwise not have seen alike.
	if err := b.threeInstances(ctx, workers, d, hc, paths[1], grant, func() (rateResult, error) { return check(paths[1]) }, stdout); err != nil {
		return err
	}
	// The pending run is compared with the NOTIFY floor measured in turns
	// with it (alternations turns each): this machine's rates drift within
	// a minute (the same floor has measured 1,345/s and 3,599/s in runs
	// minutes apart), and the floor at the run's start was measured a
	// minute earlier.
	stopSampling = b.sampleWaits(ctx)
	before := b.db.GroupStats()
	pending, notifiesAlong, err := alternate(ctx, workers, d, alternations, func(ctx context.Context, _, i int) error {
		return b.checkOnce(ctx, hc, paths[2], i)
	}, notify, b.settled, "commits with notify")
	pending.groups = groupSizes(b.db.GroupStats().Since(before))
	pSamples, pWaits := stopSampling()
	window := stopUnsealed()
	if err != nil {
		return fmt.Errorf("creating a pending item: %w", err)
	}
	nr := pending.perSec() / notifiesAlong.perSec()
	row("check creating a pending item", pending, fmt.Sprintf("%.2f× commits+NOTIFY  %s (≥0.50×)", nr, verdict(nr >= 0.50)))
	fmt.Fprintf(stdout, "  %-44s commits+NOTIFY %.0f/s in turns with it, %d×%s each (%.0f/s at the start)\n", "",
		notifiesAlong.perSec(), alternations, d/alternations, notifies.perSec())
	fmt.Fprintf(stdout, "  request backends waiting on an advisory lock during the audited run: %d in %d samples\n", waits["Lock:advisory"], samples)
	fmt.Fprintf(stdout, "  busy backends, audited run (%d samples): %s\n", samples, topWaits(waits, 6))
	fmt.Fprintf(stdout, "  busy backends, pending run and the sealer's catching up after its turns (%d samples): %s\n", pSamples, topWaits(pWaits, 6))
	fmt.Fprintf(stdout, "  unsealed audit window during the audited runs and the pending run: at most %s  %s (<1s)\n",
		window.Round(time.Millisecond), verdict(window < time.Second))
	fmt.Fprintln(stdout)
	return nil
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

// checkPath is one of the check's paths: the tool called, by whom, and the
// answer expected.
type checkPath struct {
	tool, user, want string
}

// prepareCheckPaths sets the policies and the grant the three check paths
// need: search_messages allowed by policy; send_email allowed for one user
// by an "Always allow" grant; delete_message asking a person.
func (b *benchServer) prepareCheckPaths(ctx context.Context) ([]checkPath, error) {
	if _, err := b.db.SetToolPolicy(ctx, approval.SystemActor, "mail", "search_messages", approval.Policy{Mode: approval.ModeAllow}); err != nil {
		return nil, err
	}
	for _, t := range []string{"send_email", "delete_message"} {
		if _, err := b.db.SetToolPolicy(ctx, approval.SystemActor, "mail", t, approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
			return nil, err
		}
	}
	id, err := b.openPending(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := b.db.Decide(ctx, id, b.reviewer, approval.AlwaysAllow, ""); err != nil {
		return nil, err
	}
	return []checkPath{
		{tool: "search_messages", user: dev.DemoMember.Subject, want: "allow"},
		{tool: "send_email", user: dev.DemoMember.Subject, want: "allow"},
		{tool: "delete_message", user: dev.DemoMember.Subject, want: "pending"},
	}, nil
}

// checkOnce sends one check of path p (call i) and fails unless the answer
// is the one expected.
func (b *benchServer) checkOnce(ctx context.Context, hc *http.Client, p checkPath, i int) error {
	return b.checkOnceAt(ctx, hc, b.base, p, i)
}

var callSeq atomic.Int64

// checkOnceAt is checkOnce against the instance at base.
func (b *benchServer) checkOnceAt(ctx context.Context, hc *http.Client, base string, p checkPath, _ int) error {
	// Numbered across measurements: a call id sent again while its item is
	// pending would get that item back.
	n := strconv.FormatInt(callSeq.Add(1), 10)
	body, _ := json.Marshal(client.Call{CallID: "tp-" + n, User: p.user, ConversationID: "tp", TurnID: "tp-" + n,
		Connector: "mail", Tool: p.tool, Arguments: `{"n":` + n + `}`})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/tool-calls", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Decision string `json:"decision"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Errorf("status %d: %w", resp.StatusCode, err)
	}
	if out.Decision != p.want {
		return fmt.Errorf("%s: answered %q (status %d), want %q", p.tool, out.Decision, resp.StatusCode, p.want)
	}
	return nil
}

// getReady gets /readyz, which pings the database and then, in the bench
// (no identity provider), answers 503 for the provider: either answer
// after a successful ping is one HTTP request and one round trip.
func getReady(ctx context.Context, hc *http.Client, url string) error {
	status, body, err := get(ctx, hc, url)
	if err == nil && status != http.StatusOK && (status != http.StatusServiceUnavailable || strings.HasPrefix(string(body), "database")) {
		err = fmt.Errorf("status %d: %s", status, body)
	}
	return err
}

func getOK(ctx context.Context, hc *http.Client, url string) error {
	status, _, err := get(ctx, hc, url)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("status %d", status)
	}
	return err
}

// get reads url's answer in full.
func get(ctx context.Context, hc *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
