package main

import (
	"os"
	"path/filepath"
	"testing"
)

// dev makes its audit signing key once in the data folder and uses the
// same key on every later run.
func TestDevAuditSignerKeptBetweenRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, err := devAuditSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := devAuditSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first.KeyID != again.KeyID || !first.Public().Equal(again.Public()) {
		t.Fatalf("a new key on the second run: %s, then %s", first.KeyID, again.KeyID)
	}
	st, err := os.Stat(filepath.Join(dir, "audit.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	// The private cluster, made next in the same folder, may run as
	// another user: the folder must stay open to it.
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("data folder: %v %v", st, err)
	}
}
