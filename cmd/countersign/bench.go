package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/web"
)

// runBench measures, in one run and against one server:
//   - decision → Gate returns, with LISTEN/NOTIFY long polls, against a
//     baseline runtime that polls the item every 500 ms;
//   - the memory and goroutines that N concurrent waiting runtimes cost the
//     server, and how long one decision takes to release them all.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "countersign bench [--waiters 10000] [--iterations 200] [--database URL]", stderr, false)
	waiters := fs.Int("waiters", 10000, "concurrent waiting runtimes for the memory measurement")
	iterations := fs.Int("iterations", 200, "decisions measured with LISTEN/NOTIFY long polls")
	baseline := fs.Int("baseline-iterations", 40, "decisions measured with the 500 ms polling baseline")
	dbURL := fs.String("database", os.Getenv("COUNTERSIGN_DATABASE_URL"), "Postgres to use (default: a private cluster in a temporary folder)")
	auditEvents := fs.Int("audit-events", 0, "also load this many audit events and time the audit screen's queries and the CSV export (e.g. 1000000)")
	holdURL := fs.String("hold", "", "internal: hold waiters against this server (the waiters' own process)")
	holdKey := fs.String("hold-key", "", "internal")
	holdIDs := fs.String("hold-ids", "", "internal")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *holdURL != "" {
		return holdWaiters(*holdURL, *holdKey, strings.Split(*holdIDs, ","), *waiters, stdout)
	}
	b, err := newBenchServer(ctx, *dbURL, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	fmt.Fprintf(stdout, "Countersign bench — %s, %d CPUs, Postgres %s\n\n", runtime.Version(), runtime.NumCPU(), b.pgVersion)

	listen, err := b.latency(ctx, *iterations, 8, func(c *client.Client) { c.PollWait = 30 * time.Second })
	if err != nil {
		return err
	}
	poll, err := b.latency(ctx, *baseline, 8, nil)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Decision → Gate returns (the decision's commit to the runtime holding its answer, claim included)")
	fmt.Fprintf(stdout, "  %-34s n=%-4d p50 %8s  p99 %8s\n", "LISTEN/NOTIFY long poll", len(listen), pct(listen, 50), pct(listen, 99))
	fmt.Fprintf(stdout, "  %-34s n=%-4d p50 %8s  p99 %8s\n", "baseline: poll every 500 ms", len(poll), pct(poll, 50), pct(poll, 99))
	fmt.Fprintf(stdout, "  ratio baseline/long poll: p50 %.0f×, p99 %.0f×\n\n",
		float64(pctD(poll, 50))/float64(pctD(listen, 50)), float64(pctD(poll, 99))/float64(pctD(listen, 99)))

	if err := b.policyPropagation(ctx, 100, stdout); err != nil {
		return err
	}
	if *waiters > 0 {
		if err := b.waiters(ctx, *waiters, stdout); err != nil {
			return err
		}
	}
	if *auditEvents > 0 {
		if err := b.audit(ctx, *auditEvents, stdout); err != nil {
			return err
		}
	}
	return nil
}

// audit loads n chained audit events and times the audit screen's filtered
// first page, a deep keyset page, and the CSV export's rows per second and
// peak heap.
func (b *benchServer) audit(ctx context.Context, n int, stdout io.Writer) error {
	start := time.Now()
	for done := 0; done < n; done += 100000 {
		batch := min(100000, n-done)
		if _, err := b.db.Pool.Exec(ctx, `INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool, conversation_id, turn_id, detail)
			SELECT 'user', 'user-' || (g % 50), 'User ' || (g % 50),
				(ARRAY['approved','rejected','approval requested','auto-approved by Always allow','expired','claimed'])[1 + g % 6],
				(ARRAY['mail','files','web','calendar','system'])[1 + g % 5],
				(ARRAY['send_email','delete_file','open_page','create_event','run_command','search_messages','read_file'])[1 + g % 7],
				'conv-' || (g % 1000), 'turn-' || g, jsonb_build_object('n', g)
			FROM generate_series($1::int, $2::int) g`, done+1, done+batch); err != nil {
			return err
		}
	}
	if _, err := b.db.Pool.Exec(ctx, `ANALYZE audit_events`); err != nil {
		return err
	}
	load := time.Since(start)
	var total int64
	_ = b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events`).Scan(&total)
	f := db.AuditFilter{Actions: []string{"approved"}, Tool: "send_email", Limit: 50}
	timeIt := func(f db.AuditFilter) ([]time.Duration, error) {
		var ds []time.Duration
		for i := 0; i < 30; i++ {
			t0 := time.Now()
			if _, err := b.db.ListAudit(ctx, f); err != nil {
				return nil, err
			}
			ds = append(ds, time.Since(t0))
		}
		return ds, nil
	}
	first, err := timeIt(f)
	if err != nil {
		return err
	}
	var deepID int64
	_ = b.db.Pool.QueryRow(ctx, `SELECT id FROM audit_events WHERE action = 'approved' AND tool = 'send_email' ORDER BY id LIMIT 1 OFFSET 100`).Scan(&deepID)
	deepF := f
	deepF.Before = deepID
	deep, err := timeIt(deepF)
	if err != nil {
		return err
	}
	unfiltered, err := timeIt(db.AuditFilter{Limit: 50, Before: deepID})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nAudit log with %d events (loaded and chained in %s)\n", total, load.Round(time.Millisecond))
	fmt.Fprintf(stdout, "  filtered first page (action + tool, 50 lines)   p50 %8s  p99 %8s\n", pct(first, 50), pct(first, 99))
	fmt.Fprintf(stdout, "  filtered deep keyset page (near the oldest)     p50 %8s  p99 %8s\n", pct(deep, 50), pct(deep, 99))
	fmt.Fprintf(stdout, "  unfiltered deep keyset page                     p50 %8s  p99 %8s\n", pct(unfiltered, 50), pct(unfiltered, 99))

	_, h0 := settledStats()
	var peak uint64
	var rows int64
	t0 := time.Now()
	cw := csv.NewWriter(io.Discard)
	var m runtime.MemStats
	err = b.db.StreamAudit(ctx, db.AuditFilter{}, func(l db.AuditLine) error {
		rows++
		detail, _ := json.Marshal(l.Detail)
		if err := cw.Write([]string{strconv.FormatInt(l.ID, 10), l.At.UTC().Format(time.RFC3339Nano), l.ActorName, l.Action,
			l.Connector, l.Tool, l.ConversationID, l.TurnID, string(detail), l.Hash}); err != nil {
			return err
		}
		if rows%20000 == 0 {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
		return nil
	})
	cw.Flush()
	if err != nil {
		return err
	}
	el := time.Since(t0)
	fmt.Fprintf(stdout, "  CSV export of all %d events: %s, %.0f rows/s, peak heap %.1f MiB (%.1f MiB above idle)\n",
		rows, el.Round(time.Millisecond), float64(rows)/el.Seconds(), mib(peak), mib(peak)-mib(h0))
	rep, err := b.db.VerifyAudit(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  audit verify: %s\n", rep)
	return nil
}

type benchServer struct {
	db        *db.DB
	hub       *db.Hub
	base      string
	key       string
	reviewer  db.User
	cluster   *dev.Cluster
	dir       string
	cancel    context.CancelFunc
	done      chan struct{}
	pgVersion string
	n         int
	mu        sync.Mutex
}

func newBenchServer(ctx context.Context, dbURL string, stderr io.Writer) (*benchServer, error) {
	b := &benchServer{done: make(chan struct{})}
	if dbURL == "" {
		dir, err := os.MkdirTemp("", "countersign-bench-")
		if err != nil {
			return nil, err
		}
		_ = os.Chmod(dir, 0o755)
		b.dir = dir
		if b.cluster, err = dev.StartCluster(ctx, filepath.Join(dir, "pg")); err != nil {
			return nil, err
		}
		if dbURL, err = ensureDatabase(ctx, b.cluster.URL(), "countersign_bench"); err != nil {
			b.close()
			return nil, err
		}
	}
	var store *db.DB
	var err error
	if b.cluster != nil {
		// Its own throwaway cluster: set it up.
		if _, err = db.Migrate(ctx, dbURL); err == nil {
			store, err = db.Open(ctx, dbURL)
		}
	} else {
		store, err = openMigrated(ctx, dbURL)
	}
	if err != nil {
		b.close()
		return nil, err
	}
	b.db = store
	_ = store.Pool.QueryRow(ctx, `SHOW server_version`).Scan(&b.pgVersion)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, _ := web.LoadConfig(func(string) string { return "" })
	cfg.DatabaseURL = dbURL
	runCtx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.hub = db.NewHub(dbURL, log)
	go b.hub.Run(runCtx)
	<-b.hub.Ready()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.close()
		return nil, err
	}
	b.base = "http://" + ln.Addr().String()
	cfg.BaseURL, _ = cfg.BaseURL.Parse(b.base)
	srv := web.New(web.Deps{Config: cfg, DB: store, Log: log, Hub: b.hub})
	go func() { defer close(b.done); _ = srv.Serve(runCtx, ln) }()
	if b.key, _, err = store.CreateAPIKey(ctx, "bench", nil); err != nil {
		b.close()
		return nil, err
	}
	if b.reviewer, err = store.SignIn(ctx, db.User{Issuer: "bench", Subject: dev.DemoMember.Subject, Email: dev.DemoMember.Email}); err != nil {
		b.close()
		return nil, err
	}
	if err := client.New(b.base, b.key).SyncConnector(ctx, "mail", dev.DemoCatalog["mail"]); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *benchServer) close() {
	if b.cancel != nil {
		b.cancel()
		<-b.done
	}
	if b.db != nil {
		b.db.Close()
	}
	if b.cluster != nil {
		_ = b.cluster.Stop()
	}
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

func (b *benchServer) nextCall() client.Call {
	b.mu.Lock()
	b.n++
	n := b.n
	b.mu.Unlock()
	return client.Call{CallID: "bench-" + strconv.Itoa(n), User: dev.DemoMember.Subject, ConversationID: "bench",
		TurnID: "turn-" + strconv.Itoa(n), Connector: "mail", Tool: "send_email", Arguments: `{"to":"bench@example.com","n":` + strconv.Itoa(n) + `}`}
}

// latency runs iterations of: a runtime calls Gate, a person approves, the
// runtime gets its answer. With tune == nil the runtime is the polling
// baseline. Up to parallel iterations run at once.
func (b *benchServer) latency(ctx context.Context, iterations, parallel int, tune func(*client.Client)) ([]time.Duration, error) {
	var mu sync.Mutex
	var out []time.Duration
	var firstErr error
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := 0; i < iterations; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			d, err := b.once(ctx, tune)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if err == nil {
				out = append(out, d)
			}
		}()
	}
	wg.Wait()
	return out, firstErr
}

func (b *benchServer) once(ctx context.Context, tune func(*client.Client)) (time.Duration, error) {
	call := b.nextCall()
	c := client.New(b.base, b.key)
	type result struct {
		at  time.Time
		ok  bool
		err error
	}
	res := make(chan result, 1)
	if tune != nil {
		tune(c)
		go func() {
			out, err := c.Gate(ctx, call)
			res <- result{time.Now(), out.Allowed, err}
		}()
	} else {
		go func() {
			ok, err := pollingGate(ctx, b.base, b.key, call)
			res <- result{time.Now(), ok, err}
		}()
	}
	id, err := b.waitPending(ctx, call.CallID)
	if err != nil {
		return 0, err
	}
	// Let the runtime settle into its wait before deciding.
	time.Sleep(time.Duration(50+time.Now().UnixNano()%200) * time.Millisecond)
	start := time.Now()
	if _, err := b.db.Decide(ctx, id, b.reviewer, approval.Approve, ""); err != nil {
		return 0, err
	}
	r := <-res
	if r.err != nil || !r.ok {
		return 0, fmt.Errorf("gate did not allow: %v", r.err)
	}
	return r.at.Sub(start), nil
}

func (b *benchServer) waitPending(ctx context.Context, callID string) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var id string
		err := b.db.Pool.QueryRow(ctx, `SELECT id::text FROM approvals WHERE call_id = $1`, callID).Scan(&id)
		if err == nil {
			return id, nil
		}
		if time.Now().After(deadline) {
			return "", errors.New("no pending item appeared")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// pollingGate is the baseline runtime: check, then read the item every
// 500 ms until it is decided, then claim.
func pollingGate(ctx context.Context, base, key string, call client.Call) (bool, error) {
	var first struct {
		Approval struct {
			ID string `json:"id"`
		} `json:"approval"`
	}
	if err := doJSON(ctx, base, key, http.MethodPost, "/api/v1/tool-calls", call, &first); err != nil {
		return false, err
	}
	for {
		var st struct {
			Status string `json:"status"`
		}
		if err := doJSON(ctx, base, key, http.MethodGet, "/api/v1/approvals/"+first.Approval.ID, nil, &st); err != nil {
			return false, err
		}
		if st.Status != "pending" {
			err := doJSON(ctx, base, key, http.MethodPost, "/api/v1/approvals/"+first.Approval.ID+"/claim",
				map[string]string{"call_id": call.CallID, "arguments_digest": approval.Digest(call.Arguments)}, nil)
			return err == nil && st.Status == "approved", err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func pctD(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func pct(ds []time.Duration, p int) string {
	return pctD(ds, p).Round(10 * time.Microsecond).String()
}

// waiters holds n long polls open from a separate process (so that the
// numbers are the server's alone) and measures the server's goroutines and
// heap with and without them, then releases them all with one decision each
// on 100 items.
func (b *benchServer) waiters(ctx context.Context, n int, stdout io.Writer) error {
	const items = 100
	ids := make([]string, 0, items)
	for i := 0; i < items; i++ {
		call := b.nextCall()
		var res struct {
			Approval struct {
				ID string `json:"id"`
			} `json:"approval"`
		}
		if err := doJSON(ctx, b.base, b.key, http.MethodPost, "/api/v1/tool-calls", call, &res); err != nil {
			return err
		}
		ids = append(ids, res.Approval.ID)
	}
	g0, h0 := settledStats()
	subs0 := b.hub.Subscribers()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, exe, "bench", "--hold", b.base, "--hold-key", b.key, "--hold-ids", strings.Join(ids, ","), "--waiters", strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(pipe)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "sent") {
		return fmt.Errorf("waiter process: %q", lines.Text())
	}
	deadline := time.Now().Add(2 * time.Minute)
	for b.hub.Subscribers() < subs0+n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d waiters subscribed", b.hub.Subscribers()-subs0, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	g1, h1 := settledStats()
	fmt.Fprintf(stdout, "%d concurrent waiting runtimes (long polls on %d items), server side\n", n, items)
	fmt.Fprintf(stdout, "  goroutines  %7d → %7d   (+%.2f per waiter)\n", g0, g1, float64(g1-g0)/float64(n))
	fmt.Fprintf(stdout, "  heap in use %6.1f MiB → %6.1f MiB (+%.1f KiB per waiter)\n", mib(h0), mib(h1), float64(h1-h0)/1024/float64(n))
	fmt.Fprintf(stdout, "  listening database connections: 1 (the process's LISTEN), pool size %d\n", b.db.Pool.Stat().MaxConns())
	start := time.Now()
	for _, id := range ids {
		if _, err := b.db.Decide(ctx, id, b.reviewer, approval.Approve, ""); err != nil {
			return err
		}
	}
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "released") {
		return fmt.Errorf("waiter process: %q", lines.Text())
	}
	fmt.Fprintf(stdout, "  %d decisions released all %d waiters in %s\n", items, n, time.Since(start).Round(time.Millisecond))
	for b.hub.Subscribers() > subs0 && time.Since(start) < time.Minute {
		time.Sleep(20 * time.Millisecond)
	}
	g2, h2 := settledStats()
	fmt.Fprintf(stdout, "  after release: goroutines %d, heap %.1f MiB, subscriptions %d (leak check)\n", g2, mib(h2), b.hub.Subscribers()-subs0)
	return nil
}

func settledStats() (int, uint64) {
	runtime.GC()
	runtime.GC()
	time.Sleep(200 * time.Millisecond)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), m.HeapInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// holdWaiters is the waiters' own process: it opens n connections, sends a
// long poll on each (spread over ids), reports "sent", reads every answer
// and reports "released".
func holdWaiters(base, key string, ids []string, n int, stdout io.Writer) error {
	host := strings.TrimPrefix(base, "http://")
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", host)
		if err != nil {
			return fmt.Errorf("waiter %d: %w", i, err)
		}
		req := "GET /api/v1/approvals/" + ids[i%len(ids)] + "?wait=60s HTTP/1.1\r\nHost: " + host +
			"\r\nAuthorization: Bearer " + key + "\r\nConnection: close\r\n\r\n"
		if _, err := io.WriteString(c, req); err != nil {
			return err
		}
		conns = append(conns, c)
	}
	fmt.Fprintln(stdout, "sent")
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}(c)
	}
	wg.Wait()
	fmt.Fprintln(stdout, "released")
	return nil
}

func doJSON(ctx context.Context, base, key, method, path string, body, out any) error {
	c := client.New(base, key)
	return c.Do(ctx, method, path, body, out)
}

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
