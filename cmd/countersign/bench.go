package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

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
	fs := newFlags("bench", "countersign bench [--throughput] [--waiters 10000] [--iterations 200] [--database URL]", stderr, false)
	waiters := fs.Int("waiters", 10000, "concurrent waiting runtimes for the memory measurement")
	iterations := fs.Int("iterations", 200, "decisions measured with LISTEN/NOTIFY long polls")
	baseline := fs.Int("baseline-iterations", 40, "decisions measured with the 500 ms polling baseline")
	dbURL := fs.String("database", os.Getenv("COUNTERSIGN_DATABASE_URL"), "Postgres to use (default: a private cluster in a temporary folder)")
	auditEvents := fs.Int("audit-events", 0, "also load this many audit events and time the audit screen's queries and the CSV export (e.g. 1000000)")
	tput := fs.Bool("throughput", false, "measure only throughput: the floors and the check's three paths, with ratios")
	runtimes := fs.Int("runtimes", 16, "concurrent runtimes for --throughput")
	soakFor := fs.Duration("soak", 0, "run the fault soak for this long instead (three serve instances on a private cluster; e.g. 10m)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the --throughput run (server and runtimes, one process) to this file")
	span := fs.Duration("span", 4*time.Second, "how long each --throughput measurement runs")
	waitersOnly := fs.Bool("waiters-only", false, "measure only the waiting runtimes' memory and goroutines (--waiters)")
	fsyncOff := fs.Bool("fsync-off", false, "run the private cluster with fsync=off: faster, but a commit no longer waits for the disk, so floors and paths measure less than a production Postgres does")
	var pgSettings []string
	fs.Func("postgres-setting", "a setting for the private cluster, name=value (repeatable; e.g. shared_preload_libraries=pg_stat_statements)", func(v string) error {
		pgSettings = append(pgSettings, v)
		return nil
	})
	holdURL := fs.String("hold", "", "internal: hold waiters against this server (the waiters' own process)")
	holdKey := fs.String("hold-key", "", "internal")
	holdIDs := fs.String("hold-ids", "", "internal")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *soakFor > 0 {
		return runBenchSoak(ctx, *soakFor, stdout)
	}
	if *holdURL != "" {
		return holdWaiters(*holdURL, *holdKey, strings.Split(*holdIDs, ","), *waiters, stdout)
	}
	b, err := newBenchServer(ctx, *dbURL, dev.ClusterOptions{Durable: !*fsyncOff, Settings: pgSettings}, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	fmt.Fprintf(stdout, "Countersign bench — %s, %d CPUs, Postgres %s\n\n", runtime.Version(), runtime.NumCPU(), b.pgVersion)
	if *tput {
		if *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		return b.throughput(ctx, *runtimes, *span, stdout)
	}

	if *waitersOnly {
		return b.waiters(ctx, *waiters, stdout)
	}
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

type benchServer struct {
	db        *db.DB
	url       string
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

// newBenchServer serves Countersign over dbURL or, when it is empty, over a
// private cluster started with opts. The private cluster is durable unless
// told otherwise: the bench measures what a commit costs where it has to
// reach the disk, as in production.
func newBenchServer(ctx context.Context, dbURL string, opts dev.ClusterOptions, stderr io.Writer) (*benchServer, error) {
	b := &benchServer{done: make(chan struct{})}
	if dbURL == "" {
		dir, err := dev.TempDir("countersign-bench-")
		if err != nil {
			return nil, err
		}
		b.dir = dir
		if b.cluster, err = dev.StartClusterWith(ctx, filepath.Join(dir, "pg"), opts); err != nil {
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
	b.url = dbURL
	if err != nil {
		b.close()
		return nil, err
	}
	b.db = store
	var fsync, syncCommit string
	_ = store.Pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')`).
		Scan(&b.pgVersion, &fsync, &syncCommit)
	b.pgVersion += " — fsync " + fsync + ", synchronous_commit " + syncCommit
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, _ := web.LoadConfig(func(string) string { return "" })
	cfg.DatabaseURL = dbURL
	runCtx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.hub = db.NewHub(dbURL, log)
	go b.hub.Run(runCtx)
	go store.RunSealer(runCtx, log, sealEvery)
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
	if b.key, _, err = store.CreateAPIKeyWith(ctx, "bench", nil, db.APIKeyOptions{Replace: true}); err != nil {
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

func doJSON(ctx context.Context, base, key, method, path string, body, out any) error {
	c := client.New(base, key)
	return c.Do(ctx, method, path, body, out)
}

// openPending sends the next call of a tool that asks a person and returns
// the pending item's id.
func (b *benchServer) openPending(ctx context.Context) (string, error) {
	var res struct {
		Approval struct {
			ID string `json:"id"`
		} `json:"approval"`
	}
	if err := doJSON(ctx, b.base, b.key, http.MethodPost, "/api/v1/tool-calls", b.nextCall(), &res); err != nil {
		return "", err
	}
	return res.Approval.ID, nil
}
