package testenv

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/jackc/pgx/v5"
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
// append-only triggers (on events, on their seals and on checkpoints)
// would: with them off, and on again afterwards.
func AsAuditAdmin(t testing.TB, store *db.DB, sqls ...string) {
	t.Helper()
	const tables = `ALTER TABLE audit_events %[1]s TRIGGER audit_events_no_update_delete;
		ALTER TABLE audit_chain %[1]s TRIGGER audit_chain_no_update_delete;
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
	AsAuditAdmin(t, store, fmt.Sprintf(`DO $$ DECLARE c audit_chain; h TEXT; prev TEXT; BEGIN
		SELECT COALESCE((SELECT hash FROM audit_chain WHERE seq = %[1]d - 1), repeat('0', 64)) INTO prev;
		FOR c IN SELECT * FROM audit_chain WHERE seq >= %[1]d ORDER BY seq LOOP
			h := audit_chain_hash(prev, c.seq, (SELECT e FROM audit_events e WHERE e.id = c.event_id));
			UPDATE audit_chain SET prev_hash = prev, hash = h WHERE seq = c.seq;
			prev := h;
		END LOOP; END $$`, from))
}

// AuditEventAt is the SQL condition on audit_events that picks the event
// sealed at place seq of the chain.
func AuditEventAt(seq int64) string {
	return fmt.Sprintf("id = (SELECT event_id FROM audit_chain WHERE seq = %d)", seq)
}

// SealAsBefore seals every audit line of a database at a schema before
// migration 00041, as the sealer of that schema did (the seals on the
// lines' own rows), waiting for transactions still open anywhere in the
// cluster, which hold the sealer's horizon back.
func SealAsBefore(t testing.TB, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		var left bool
		if err := conn.QueryRow(ctx, `SELECT audit_seal(10000)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM audit_events WHERE seq IS NULL)`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if !left {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("audit lines still unsealed after 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
