package dev_test

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/dev"
	"github.com/jackc/pgx/v5"
)

// work hashes n times: a fixed amount of CPU, whatever else the machine
// does.
func work(n int) {
	var h [32]byte
	for range n {
		h = sha256.Sum256(h[:])
	}
}

// rusage is this process's user and system time as the kernel reports it
// to the process itself.
func rusage(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestClusterCPUTime reads what the bench reports per check: a process's
// CPU time as the process itself knows it; the cluster's server as its
// postmaster and its children, counting their work and nothing of this
// process's; and a backend's time still counted after it ended.
func TestClusterCPUTime(t *testing.T) {
	if _, err := dev.FindPostgresBin(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := dev.TempDir("countersign-cpu-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c, err := dev.StartClusterWith(ctx, filepath.Join(dir, "pg"), dev.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	connect := func() (*pgx.Conn, int) {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.URL())
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		return conn, pid
	}
	conn, backend := connect()
	defer conn.Close(ctx)
	pm, err := c.PostmasterPID()
	if err != nil {
		t.Fatal(err)
	}
	children, err := dev.Children(pm)
	if err != nil {
		t.Fatal(err)
	}
	// The backend, and the server's own processes (checkpointer, WAL
	// writer, …); not the postmaster itself.
	if !slices.Contains(children, backend) || slices.Contains(children, pm) || len(children) < 4 {
		t.Fatalf("the postmaster %d's children %v: want backend %d and the server's processes", pm, children, backend)
	}

	read := func() (self, server time.Duration) {
		t.Helper()
		if self, err = dev.ProcessCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
		if server, err = c.CPUTime(); err != nil {
			t.Fatal(err)
		}
		return self, server
	}
	// This process's work, as it knows it itself (to a clock tick a
	// reading), and not the server's.
	self0, server0 := read()
	r0 := rusage(t)
	work(3_000_000)
	r1 := rusage(t)
	self1, server1 := read()
	if got, want := self1-self0, r1-r0; got < want-30*time.Millisecond || got > want+30*time.Millisecond || want < 50*time.Millisecond {
		t.Fatalf("this process counted %s; it says it used %s", got, want)
	}
	if d := server1 - server0; d > (r1-r0)/4 {
		t.Fatalf("the server counted %s while this process worked %s", d, r1-r0)
	}
	// A backend's work is the server's.
	const hashRows = `SELECT count(sha256(int8send(g))) FROM generate_series(1, 2000000) g`
	if _, err := conn.Exec(ctx, hashRows); err != nil {
		t.Fatal(err)
	}
	self2, server2 := read()
	if d := server2 - server1; d < 200*time.Millisecond {
		t.Fatalf("the backend's query counted %s", d)
	}
	if d := self2 - self1; d > (server2-server1)/4 {
		t.Fatalf("this process counted %s while the server worked %s", d, server2-server1)
	}
	// A backend that worked and ended: its time stays counted.
	other, pid := connect()
	if _, err := other.Exec(ctx, hashRows); err != nil {
		t.Fatal(err)
	}
	_, server3 := read()
	if err := other.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Until the postmaster has waited for it: a process that ended keeps
	// its /proc entry until then.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := dev.ProcessCPU(pid); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backend %d still running after its connection closed", pid)
		}
	}
	if _, server4 := read(); server4 < server3 {
		t.Fatalf("the server's time fell from %s to %s when a backend ended", server3, server4)
	}
	if _, err := dev.ProcessCPU(1 << 30); err == nil {
		t.Fatal("a process that does not exist has a CPU time")
	}
}
