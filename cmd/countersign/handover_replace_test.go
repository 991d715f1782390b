package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

// Key names are unique per owner: when the kept key's file is gone but its
// key still stands, the next start replaces that key (revoking it) rather
// than failing to make one of the same name.
func TestDevAPIKeyFileLost(t *testing.T) {
	ctx := context.Background()
	store, _ := testenv.OpenDB(t)
	path := filepath.Join(t.TempDir(), ".countersign", devKeyFile)
	first, err := devAPIKey(ctx, store, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	second, err := devAPIKey(ctx, store, path)
	if err != nil || second == first {
		t.Fatalf("after the file was lost: %q %v", second, err)
	}
	if _, err := store.AuthenticateAPIKey(ctx, first); err == nil {
		t.Fatal("the replaced key still works")
	}
	if _, err := store.AuthenticateAPIKey(ctx, second); err != nil {
		t.Fatalf("the new key is refused: %v", err)
	}
}
