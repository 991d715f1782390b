package db_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

// rewriteHistory edits event seq and recomputes every hash from there on,
// as someone able to disable the append-only trigger could: the hash chain
// alone stays consistent.
func rewriteHistory(t *testing.T, store *db.DB, seq int64) {
	t.Helper()
	testenv.AsAuditAdmin(t, store, `UPDATE audit_events SET action = 'rejected' WHERE `+testenv.AuditEventAt(seq))
	testenv.RechainAudit(t, store, seq)
}

// A rewrite of history with recomputed hashes passes the hash chain but not
// the signed checkpoints, which name where it contradicts them.
func TestAuditCheckpointsCatchRewrite(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	signer, pub, _ := testenv.AuditSigner(t)
	var sent []db.Checkpoint // as SealOnce returned them
	sealer := &db.Sealer{DB: store, Signer: signer, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for round := 0; round < 2; round++ {
		record(t, store, 10, func(i int) approval.AuditEvent {
			return approval.AuditEvent{Actor: approval.SystemActor, Action: "approved", Tool: fmt.Sprint("t", i)}
		})
		if err := store.SealAll(ctx); err != nil {
			t.Fatal(err)
		}
		_, cp, err := sealer.SealOnce(ctx, true)
		if err != nil || cp == nil {
			t.Fatalf("checkpoint: %v %v", cp, err)
		}
		sent = append(sent, *cp)
	}
	if len(sent) != 2 || sent[0].Seq != 10 || sent[1].Seq != 20 || !sent[1].Verify(pub) {
		t.Fatalf("checkpoints sent: %+v", sent)
	}
	if r, err := store.VerifyAuditSigned(ctx, pub); err != nil || !r.Intact || r.Checkpoints != 2 || r.Events != 20 {
		t.Fatalf("before the rewrite: %+v %v", r, err)
	}

	rewriteHistory(t, store, 15)
	if r, err := store.VerifyAudit(ctx); err != nil || !r.Intact {
		t.Fatalf("the rewrite should pass the hash chain alone (that is the weakness): %+v %v", r, err)
	}
	r, err := store.VerifyAuditSigned(ctx, pub)
	if err != nil || r.Intact || r.BrokenAt != 20 || !strings.Contains(r.Problem, "events 11–20") {
		t.Fatalf("rewrite not caught by the checkpoints: %+v %v", r, err)
	}

	// A checkpoint that was not signed with the key is refused too.
	other := filepath.Join(t.TempDir(), "other.key")
	if _, err := db.GenerateSigningKey(other); err != nil {
		t.Fatal(err)
	}
	if r, err := store.VerifyAuditSigned(ctx, mustPub(t, other+".pub")); err != nil || r.Intact || !strings.Contains(r.Problem, "does not verify") {
		t.Fatalf("checkpoints checked with another key: %+v %v", r, err)
	}
	if _, err := store.Pool.Exec(ctx, `UPDATE audit_checkpoints SET hash = 'x'`); err == nil {
		t.Fatal("a checkpoint was edited")
	}
	if _, err := store.Pool.Exec(ctx, `TRUNCATE audit_checkpoints`); err == nil {
		t.Fatal("the checkpoints were emptied")
	}
}

// Removing the checkpoints (as someone able to disable the triggers could)
// does not make an old rewrite pass: events sealed long ago that no
// checkpoint covers break the verification, which names them.
func TestAuditCheckpointsRemovedAreNoticed(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	ctx := context.Background()
	signer, pub, _ := testenv.AuditSigner(t)
	sealer := &db.Sealer{DB: store, Signer: signer, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	record(t, store, 10, func(i int) approval.AuditEvent {
		return approval.AuditEvent{Actor: approval.SystemActor, Action: "approved", Tool: fmt.Sprint("t", i)}
	})
	if err := store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	// The events become ten minutes old (their time is in their hash: the
	// chain is computed again), then a checkpoint covers them.
	testenv.AsAuditAdmin(t, store, `UPDATE audit_events SET at = at - interval '10 minutes'`)
	testenv.RechainAudit(t, store, 1)
	if _, cp, err := sealer.SealOnce(ctx, true); err != nil || cp == nil {
		t.Fatalf("checkpoint: %v %v", cp, err)
	}
	if r, err := store.VerifyAuditSigned(ctx, pub); err != nil || !r.Intact || r.CheckpointSeq != 10 {
		t.Fatalf("old events under a checkpoint: %+v %v", r, err)
	}
	testenv.AsAuditAdmin(t, store, `DELETE FROM audit_checkpoints`)
	r, err := store.VerifyAuditSigned(ctx, pub)
	if err != nil || r.Intact || r.BrokenAt != 1 || !strings.Contains(r.Problem, "no signed checkpoint covers events 1–10") {
		t.Fatalf("checkpoints removed: %+v %v", r, err)
	}
}
func mustPub(t *testing.T, path string) []byte {
	t.Helper()
	pub, err := db.LoadPublicKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}
