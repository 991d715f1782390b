package db_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/jackc/pgx/v5"
)

// TestCrashKeepsEveryAllowedLine kills Postgres (kill -9 of the postmaster
// of a private cluster this test starts — never a shared server — and of
// every process it started, as a crash of the server would) during a
// burst of checks their policy allows, three times, and after each restart
// finds the audit line of every call that was answered "allow" (invariant
// 19). It runs when COUNTERSIGN_SOAK=1 (CI sets it) and needs PostgreSQL's
// server binaries, as `countersign dev` does.
func TestCrashKeepsEveryAllowedLine(t *testing.T) {
	if os.Getenv("COUNTERSIGN_SOAK") != "1" {
		t.Skip("set COUNTERSIGN_SOAK=1 to run the crash test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir, err := dev.TempDir("countersign-crash-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cluster, err := dev.StartCluster(ctx, filepath.Join(dir, "pg"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cluster.Stop() }()
	admin, err := pgx.Connect(ctx, cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `CREATE DATABASE crash`); err != nil {
		t.Fatal(err)
	}
	_ = admin.Close(ctx)
	url := withDatabase(cluster.URL(), "crash")
	if _, err := db.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	store, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: []db.ToolSync{{Name: "search", DisplayName: "Search"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetToolPolicy(ctx, approval.SystemActor, "mail", "search", approval.Policy{Mode: approval.ModeAllow}); err != nil {
		t.Fatal(err)
	}
	raw, _, err := store.CreateAPIKey(ctx, "runtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	var allowed []string
	for round := range 3 {
		got, failed := burstAndKill(ctx, t, store, cluster, raw, round)
		store.Close()
		allowed = append(allowed, got...)
		if err := cluster.StartAgain(ctx); err != nil {
			t.Fatal(err)
		}
		if store, err = db.Open(ctx, url); err != nil {
			t.Fatal(err)
		}
		var lines []string
		rows, err := store.Pool.Query(ctx, `SELECT detail->>'call_id' FROM audit_events WHERE action = $1`, approval.ActionAllowedByPolicy)
		if err == nil {
			lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			t.Fatal(err)
		}
		have := make(map[string]bool, len(lines))
		for _, id := range lines {
			have[id] = true
		}
		var missing []string
		for _, id := range allowed {
			if !have[id] {
				missing = append(missing, id)
			}
		}
		t.Logf("round %d: %d calls allowed so far, %d checks failed at the crash, %d lines kept", round, len(allowed), failed, len(lines))
		if len(got) == 0 || failed == 0 {
			t.Fatalf("round %d: the crash did not come during the burst (%d allowed, %d failed)", round, len(got), failed)
		}
		if len(missing) > 0 {
			t.Fatalf("round %d: %d calls answered \"allow\" have no audit line after the crash, e.g. %v", round, len(missing), missing[:min(5, len(missing))])
		}
	}
	store.Close()
}

// burstAndKill runs checks of the allowed tool from 16 runtimes, kills the
// cluster's postmaster (SIGKILL) while they run, and returns the calls
// answered "allow" and how many checks failed.
func burstAndKill(ctx context.Context, t *testing.T, store *db.DB, cluster *dev.Cluster, raw string, round int) (allowed []string, failed int) {
	t.Helper()
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("r%d-w%d-%d", round, w, i)
				cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				res, _, err := store.CheckWithAPIKey(cctx, raw, db.CheckRequest{CallID: id, User: "owner", ConversationID: "conv",
					TurnID: "turn-" + strconv.Itoa(i), Connector: "mail", Tool: "search", Arguments: `{"q":"x"}`}, db.CheckOptions{Timeout: time.Hour})
				cancel()
				mu.Lock()
				switch {
				case err != nil:
					failed++
				case res.Outcome.Verdict == approval.Allow:
					allowed = append(allowed, id)
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	pid, err := cluster.PostmasterPID()
	if err == nil {
		err = killWithChildren(pid)
	}
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	return allowed, failed
}

// killWithChildren kills pid with SIGKILL, and every process whose parent
// it was. A backend outlives its postmaster until it next looks, and goes
// on answering the connections it has: on a fast machine, half a second
// after the postmaster alone was killed, no check had failed yet. The
// children are listed first: once the postmaster is gone they are init's.
func killWithChildren(pid int) error {
	children, err := dev.Children(pid)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	for _, child := range children {
		_ = syscall.Kill(child, syscall.SIGKILL)
	}
	return nil
}

// withDatabase is url with its database named name.
func withDatabase(url, name string) string {
	const suffix = "/postgres?sslmode=disable"
	return url[:len(url)-len(suffix)] + "/" + name + "?sslmode=disable"
}
