package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/web"
)

// The audit signing key is read by the commands that serve: a good key
// gives the signer (and the screen its public key), a missing or malformed
// one stops the server with the variable's name; loading the rest of the
// configuration (migrate, audit verify) does not touch it.
func TestConfigAuditSigningKey(t *testing.T) {
	load := func(path string) (web.Config, error) {
		c, err := web.LoadConfig(func(k string) string {
			if k == "COUNTERSIGN_AUDIT_SIGNING_KEY" {
				return path
			}
			return ""
		})
		if err != nil || c.AuditSigningKey != path || c.AuditSigner != nil {
			t.Fatalf("configuration of %q read the key, or did not keep its path: %v", path, err)
		}
		return c, c.LoadAuditSigner()
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "audit.key")
	pub, err := db.GenerateSigningKey(good)
	if err != nil {
		t.Fatal(err)
	}
	c, err := load(good)
	if err != nil || c.AuditSigner == nil || !c.AuditSigner.Public().Equal(pub) {
		t.Fatalf("good key: %v %v", c.AuditSigner, err)
	}
	if c, err := load(""); err != nil || c.AuditSigner != nil || c.AuditSigner.Public() != nil {
		t.Fatalf("no key: %v %v", c.AuditSigner, err)
	}
	bad := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.key"), bad, good + ".pub"} {
		if _, err := load(path); err == nil || !strings.Contains(err.Error(), "COUNTERSIGN_AUDIT_SIGNING_KEY") {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
	}
}
