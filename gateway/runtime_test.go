package gateway_test

import (
	"context"
	"os"
	"testing"
)

// The gateway's checks say who asks: itself and the upstream as it named
// itself in initialize, the host and the working directory.
func TestRuntimeNamesTheUpstream(t *testing.T) {
	n := &notes{}
	h := start(t, n.inMemory())
	_ = h.callAsync("write_note", `{"title":"x"}`, nil)
	id := h.pending(t, "write_note")
	var client, host, dir string
	if err := h.e.DB.Pool.QueryRow(context.Background(), `SELECT runtime_client, runtime_host, runtime_working_directory
		FROM approvals WHERE id = $1`, id).Scan(&client, &host, &dir); err != nil {
		t.Fatal(err)
	}
	wantHost, _ := os.Hostname()
	wantDir, _ := os.Getwd()
	if client != "countersign mcp → notes 1" || host != wantHost || dir != wantDir {
		t.Fatalf("runtime %q %q %q", client, host, dir)
	}
}
