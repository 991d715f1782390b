package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	if os.Getenv(soakChildEnv) == "1" { // a serve instance of TestSoak
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	testenv.Main(m)
}

func TestAuditVerifyCommand(t *testing.T) {
	store, u := testenv.OpenDB(t)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if err := store.InTx(ctx, func(tx pgx.Tx) error {
			return db.RecordAudit(ctx, tx, approval.AuditEvent{Actor: approval.SystemActor, Action: "expired"})
		}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ := runCmd(t, map[string]string{"COUNTERSIGN_DATABASE_URL": u}, "audit", "verify")
	if code != 0 || !strings.Contains(out, "0 events, chain intact") || !strings.Contains(out, "5 newer events not sealed yet") {
		t.Fatalf("before the seal, exit %d: %s", code, out)
	}
	if err := store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCmd(t, map[string]string{"COUNTERSIGN_DATABASE_URL": u}, "audit", "verify")
	if code != 0 || !strings.Contains(out, "5 events, chain intact") || !strings.Contains(out, "no unsealed events") {
		t.Fatalf("exit %d: %s", code, out)
	}
	testenv.AsAuditAdmin(t, store, `UPDATE audit_events SET actor_name = 'someone else' WHERE `+testenv.AuditEventAt(3))
	code, out, errb := runCmd(t, map[string]string{"COUNTERSIGN_DATABASE_URL": u}, "audit", "verify")
	if code != 1 || !strings.Contains(out, "chain broken at event 3") || !strings.Contains(errb, "broken") {
		t.Fatalf("exit %d: %s %s", code, out, errb)
	}
}

// audit keygen makes a key; checkpoints signed with it let audit verify
// --public-key catch a rewrite that recomputed every hash.
func TestAuditVerifySignedCommand(t *testing.T) {
	store, u := testenv.OpenDB(t)
	ctx := context.Background()
	key := filepath.Join(t.TempDir(), "audit.key")
	if code, out, errb := runCmd(t, nil, "audit", "keygen", "--out", key); code != 0 || !strings.Contains(out, key+".pub") {
		t.Fatalf("keygen exit %d: %s %s", code, out, errb)
	}
	if code, _, _ := runCmd(t, nil, "audit", "keygen", "--out", key); code == 0 {
		t.Fatal("keygen overwrote a key")
	}
	signer, err := db.LoadSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		_ = store.InTx(ctx, func(tx pgx.Tx) error {
			return db.RecordAudit(ctx, tx, approval.AuditEvent{Actor: approval.SystemActor, Action: "expired"})
		})
	}
	if err := store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (&db.Sealer{DB: store, Signer: signer}).SealOnce(ctx, true); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"COUNTERSIGN_DATABASE_URL": u}
	if code, out, _ := runCmd(t, env, "audit", "verify", "--public-key", key+".pub"); code != 0 || !strings.Contains(out, "1 signed checkpoints checked") {
		t.Fatalf("exit %d: %s", code, out)
	}
	testenv.AsAuditAdmin(t, store, `UPDATE audit_events SET actor_name = 'someone else' WHERE `+testenv.AuditEventAt(6),
		`UPDATE audit_chain c SET hash = audit_chain_hash(c.prev_hash, c.seq, e) FROM audit_events e WHERE e.id = c.event_id AND c.seq = 6`)
	if code, out, _ := runCmd(t, env, "audit", "verify"); code != 0 {
		t.Fatalf("the recomputed chain alone should pass, exit %d: %s", code, out)
	}
	code, out, _ := runCmd(t, env, "audit", "verify", "--public-key", key+".pub")
	if code != 1 || !strings.Contains(out, "chain broken at event 6") || !strings.Contains(out, "contradicts the checkpoint") {
		t.Fatalf("exit %d: %s", code, out)
	}
}
