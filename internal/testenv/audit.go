package testenv

import (
	"context"
	"crypto/ed25519"
	"fmt"
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

// AsAuditAdmin runs sqls as someone able to disable the audit log's
// append-only triggers (on events and on checkpoints) would: with them off,
// and on again afterwards.
func AsAuditAdmin(t testing.TB, store *db.DB, sqls ...string) {
	t.Helper()
	const tables = `ALTER TABLE audit_events %[1]s TRIGGER audit_events_no_update_delete;
		ALTER TABLE audit_checkpoints %[1]s TRIGGER audit_checkpoints_no_update_delete`
	all := append([]string{fmt.Sprintf(tables, "DISABLE")}, sqls...)
	for _, sql := range append(all, fmt.Sprintf(tables, "ENABLE")) {
		if _, err := store.Pool.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
}

// RechainAudit recomputes every sealed event's hash from event from on, as
// someone who edited history would to keep the chain consistent.
func RechainAudit(t testing.TB, store *db.DB, from int64) {
	t.Helper()
	AsAuditAdmin(t, store, fmt.Sprintf(`DO $$ DECLARE r audit_events; prev TEXT; BEGIN
		SELECT COALESCE((SELECT hash FROM audit_events WHERE seq = %[1]d - 1), repeat('0', 64)) INTO prev;
		FOR r IN SELECT * FROM audit_events WHERE seq >= %[1]d ORDER BY seq LOOP
			r.prev_hash := prev; r.hash := audit_event_hash(prev, r);
			UPDATE audit_events SET prev_hash = r.prev_hash, hash = r.hash WHERE id = r.id;
			prev := r.hash;
		END LOOP; END $$`, from))
}
