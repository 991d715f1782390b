package mcpe2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/testenv"
)

// filesystem is the reference filesystem server.
const filesystem = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

// A 20 MB file read through the gateway answers the same bytes as the
// server direct (the relay used to stop at 16 MiB and restart the server).
func TestLargeReadThroughGatewayAsDirect(t *testing.T) {
	node := requireTools(t)
	requireFile(t, filesystem)
	e := testenv.NewEnv(t)
	bin, _, env, gwEnv := gatewaySetup(t, e)
	dir := t.TempDir()
	var b strings.Builder
	for b.Len() < 20_000_000 {
		b.WriteString("line of a large file, with <html> & \"quotes\" and caf\u00e9\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	read := `{"name":"read_text_file","arguments":{"path":"` + filepath.Join(dir, "big.txt") + `"}}`
	direct := startSession(t, node, []string{filesystem, dir}, env)
	direct.call(0, "initialize", everythingInit)
	direct.notify("notifications/initialized", `{}`)
	want := direct.call(1, "tools/call", read)
	if len(want.Result) < 20_000_000 {
		t.Fatalf("direct: %d bytes %s", len(want.Result), want.Error)
	}
	gw := startSession(t, bin, []string{"mcp", "--connector", "fs", "--", node, filesystem, dir}, gwEnv)
	gw.call(0, "initialize", everythingInit)
	gw.notify("notifications/initialized", `{}`)
	for deadline := time.Now().Add(15 * time.Second); count(t, e, `SELECT count(*) FROM tools WHERE connector = 'fs' AND name = 'read_text_file'`) < 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the gateway did not register the server's tools")
		}
	}
	if _, err := e.DB.Pool.Exec(context.Background(), `UPDATE tools SET mode = 'allow' WHERE connector = 'fs'`); err != nil {
		t.Fatal(err)
	}
	got := gw.call(1, "tools/call", read)
	if got.raw != want.raw {
		t.Fatalf("through the gateway %d bytes, direct %d; error %s", len(got.raw), len(want.raw), got.Error)
	}
	// The server was not restarted: the next call works on the same one.
	if f := gw.call(2, "tools/call", `{"name":"list_allowed_directories","arguments":{}}`); len(f.Result) == 0 {
		t.Fatalf("next call: %s", f.raw)
	}
}
