package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/approval"
)

// waiters holds n long polls open from a separate process (so that the
// numbers are the server's alone) and measures the server's goroutines and
// heap with and without them, then releases them all with one decision each
// on 100 items.
func (b *benchServer) waiters(ctx context.Context, n int, stdout io.Writer) error {
	const items = 100
	ids := make([]string, 0, items)
	for i := 0; i < items; i++ {
		id, err := b.openPending(ctx)
		if err != nil {
			return err
		}
		ids = append(ids, id)
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
	// Every waiter subscribes before its first read; the reads queue for
	// the pool. Measured once they are done: the goroutines stop falling.
	for last, still := runtime.NumGoroutine(), 0; still < 5 && time.Now().Before(deadline); still++ {
		time.Sleep(200 * time.Millisecond)
		if g := runtime.NumGoroutine(); g != last {
			last, still = g, 0
		}
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
