package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// TestDevAPIKeyIsKept: the first run creates a key and keeps it (0600);
// the next run hands over the same key, which the server accepts; a
// database that does not know the kept key gets a new one.
func TestDevAPIKeyIsKept(t *testing.T) {
	ctx := context.Background()
	store, _ := testenv.OpenDB(t)
	path := filepath.Join(t.TempDir(), ".countersign", devKeyFile)
	first, err := devAPIKey(ctx, store, path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v", err, fi.Mode().Perm())
	}
	second, err := devAPIKey(ctx, store, path)
	if err != nil || second != first {
		t.Fatalf("second run: %q %v, want the kept %q", second, err, first)
	}
	if _, err := store.AuthenticateAPIKey(ctx, second); err != nil {
		t.Fatalf("the kept key is refused: %v", err)
	}
	var n int
	if err := store.Pool.QueryRow(ctx, `SELECT count(*) FROM api_keys`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d keys in the database (%v), want 1", n, err)
	}

	other, _ := testenv.OpenDB(t) // a new data folder's database, say
	third, err := devAPIKey(ctx, other, path)
	if err != nil || third == first {
		t.Fatalf("a database without the kept key: %q %v", third, err)
	}
	if _, err := other.AuthenticateAPIKey(ctx, third); err != nil {
		t.Fatalf("the new key is refused: %v", err)
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != third {
		t.Fatalf("the file keeps %q, want the new key", b)
	}
}

func TestPrintHandover(t *testing.T) {
	var b bytes.Buffer
	printHandover(&b, handover{BaseURL: "http://localhost:8080", APIKey: "cs_abc_secret", KeyFile: "/data/.countersign/dev-api-key",
		DatabaseURL: "postgres://postgres@127.0.0.1:5555/countersign?sslmode=disable", Users: []dev.DemoUser{dev.DemoMember, dev.DemoAdmin}})
	out := b.String()
	for _, want := range []string{"http://localhost:8080", "export COUNTERSIGN_API_KEY_FILE=/data/.countersign/dev-api-key",
		`export COUNTERSIGN_API_KEY="$(cat /data/.countersign/dev-api-key)"`,
		"subject demo-member", "subject demo-admin", "postgres://postgres@127.0.0.1:5555/countersign", "/api/v1/openapi.json",
		"hook --dialect claude-code --url http://localhost:8080 --user demo-member --api-key-file /data/.countersign/dev-api-key",
		"hook --dialect codex --url http://localhost:8080 --user demo-member --api-key-file /data/.countersign/dev-api-key",
		"mcp --url http://localhost:8080 --api-key-file /data/.countersign/dev-api-key --user demo-member --connector filesystem --"} {
		if !strings.Contains(out, want) {
			t.Errorf("handover lacks %q:\n%s", want, out)
		}
	}
	// The output may be read by an agent: the key itself is never printed.
	if strings.Contains(out, "cs_abc_secret") {
		t.Errorf("handover prints the key:\n%s", out)
	}
	if got := redactedURL("postgres://app:s3cret@db:5432/countersign"); strings.Contains(got, "s3cret") {
		t.Errorf("password shown: %s", got)
	}
}
