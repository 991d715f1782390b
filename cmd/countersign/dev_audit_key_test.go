package main

import (
	"os"
	"path/filepath"
	"syscall"
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
	// another user: the folder is made as open as the cluster makes it
	// (0755, less what the umask takes away).
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != os.FileMode(0o755&^mask) {
		t.Fatalf("data folder: %v %v (umask %03o)", st, err, mask)
	}
}
