package testenv

import (
	"crypto/ed25519"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/db"
)

// AuditSigner makes an audit signing key in a temporary folder and returns
// its signer, its public key and the key file's path.
func AuditSigner(t testing.TB) (*db.Signer, ed25519.PublicKey, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.key")
	pub, err := db.GenerateSigningKey(path)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := db.LoadSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	return signer, pub, path
}
