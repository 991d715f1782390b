package dev_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/dev"
	"github.com/jackc/pgx/v5"
)

// TestClusterOptions starts private clusters as the bench and `countersign
// dev` do: a durable one waits for the disk at every commit (fsync on, as
// in production), the default one does not, and further settings reach
// the server. A setting that could smuggle a second option is refused
// before anything starts.
func TestClusterOptions(t *testing.T) {
	if _, err := dev.FindPostgresBin(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := dev.TempDir("countersign-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	show := func(t *testing.T, c *dev.Cluster, names ...string) []string {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		out := make([]string, len(names))
		for i, n := range names {
			if err := conn.QueryRow(ctx, `SELECT current_setting($1)`, n).Scan(&out[i]); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		opts dev.ClusterOptions
		want []string // fsync, work_mem
	}{
		{"default", dev.ClusterOptions{}, []string{"off", "4MB"}},
		{"durable", dev.ClusterOptions{Durable: true, Settings: []string{"work_mem=8MB"}}, []string{"on", "8MB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := dev.StartClusterWith(ctx, filepath.Join(dir, tc.name), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Stop() })
			if got := show(t, c, "fsync", "work_mem"); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("fsync, work_mem = %v, want %v", got, tc.want)
			}
		})
	}
	for _, bad := range []string{"work_mem=8MB -c fsync=off", "work_mem", "work_mem='8MB'", "a=b\tc"} {
		if _, err := dev.StartClusterWith(ctx, filepath.Join(dir, "bad"), dev.ClusterOptions{Durable: true, Settings: []string{bad}}); err == nil {
			t.Fatalf("setting %q accepted", bad)
		}
	}
}
