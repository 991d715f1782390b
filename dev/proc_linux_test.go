package dev_test

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/dev"
	"github.com/jackc/pgx/v5"
)

// busy spends about d of this process's CPU.
func busy(d time.Duration) {
	var h [32]byte
	for end := time.Now().Add(d); time.Now().Before(end); {
		for range 1000 {
			h = sha256.Sum256(h[:])
		}
	}
}

// TestClusterCPUTime reads what the bench reports per check: the CPU time
// of a cluster's server counts the work its backends do and nothing this
// process does; this process's own time counts its work; and the
// cluster's processes are the postmaster's children.
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
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var backend int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		t.Fatal(err)
	}
	pm, err := c.PostmasterPID()
	if err != nil {
		t.Fatal(err)
	}
	children, err := dev.Children(pm)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(children, backend) || slices.Contains(children, os.Getpid()) {
		t.Fatalf("the postmaster's children %v: want backend %d, not this process %d", children, backend, os.Getpid())
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
	self0, server0 := read()
	busy(400 * time.Millisecond)
	self1, server1 := read()
	if d := self1 - self0; d < 200*time.Millisecond {
		t.Fatalf("this process spent 400 ms busy and counted %s", d)
	}
	if d := server1 - server0; d > 100*time.Millisecond {
		t.Fatalf("the server counted %s of this process's work", d)
	}
	// A backend's work: hash a row for every number up to two million.
	if _, err := conn.Exec(ctx, `SELECT count(sha256(int8send(g))) FROM generate_series(1, 2000000) g`); err != nil {
		t.Fatal(err)
	}
	self2, server2 := read()
	if d := server2 - server1; d < 200*time.Millisecond {
		t.Fatalf("the backend's query counted %s", d)
	}
	if d := self2 - self1; d > server2-server1 {
		t.Fatalf("this process counted %s while the server worked %s", d, server2-server1)
	}
	if _, err := dev.ProcessCPU(1 << 30); err == nil {
		t.Fatal("a process that does not exist has a CPU time")
	}
}
