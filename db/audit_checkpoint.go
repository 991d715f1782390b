package db

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Checkpoint intervals: the sealer signs the head at least this often, and
// at every CheckpointEvents events.
const (
	CheckpointEvery  = time.Minute
	CheckpointEvents = 10000
	// CheckpointIdleEvery is how often a head that did not move is signed
	// again.
	CheckpointIdleEvery = time.Hour
	// checkpointGrace is how old a sealed event may be without a checkpoint
	// that covers it: a checkpoint follows every sealed event within
	// CheckpointEvery, so an older uncovered one means that checkpoints were
	// removed, or that the instances sealing have no signing key.
	checkpointGrace = 3 * CheckpointEvery
)

// Checkpoint is a signed statement that the chain's event Seq has hash Hash.
type Checkpoint struct {
	ID        int64     `json:"id"`
	Seq       int64     `json:"seq"`
	Hash      string    `json:"hash"`
	SignedAt  time.Time `json:"signed_at"`
	KeyID     string    `json:"key_id"`
	Signature string    `json:"signature"` // base64 Ed25519 over Message()
}

// Message is the exact text signed.
func (c Checkpoint) Message() []byte {
	return fmt.Appendf(nil, "countersign audit checkpoint v1\nseq %d\nhash %s\nsigned_at %s\n",
		c.Seq, c.Hash, c.SignedAt.UTC().Format(time.RFC3339Nano))
}

// Verify checks the signature with pub.
func (c Checkpoint) Verify(pub ed25519.PublicKey) bool {
	sig, err := base64.StdEncoding.DecodeString(c.Signature)
	return err == nil && c.KeyID == KeyID(pub) && ed25519.Verify(pub, c.Message(), sig)
}

// Sealer chains the audit log and, with a Signer, signs checkpoints of it.
// Every instance runs one; the lock inside audit_seal makes one the writer
// at a time, and a checkpoint is written in the same transaction as the
// seal, under that lock.
type Sealer struct {
	DB     *DB
	Signer *Signer // nil: no checkpoints
	Log    *slog.Logger
}

// RunSealer runs a Sealer without checkpoints every interval until ctx
// ends.
func (d *DB) RunSealer(ctx context.Context, log *slog.Logger, interval time.Duration) {
	(&Sealer{DB: d, Log: log}).Run(ctx, interval)
}

// pendingVacuumEvery is how many lines this sealer seals between two
// vacuums of the queue of lines waiting for their seal (audit_pending).
const pendingVacuumEvery = 20000

// Run seals every interval until ctx ends. Every seal deletes its lines
// from the queue, so the queue is mostly dead rows between two of
// autovacuum's visits (a minute apart at most), and every read of it — the
// seal's, a count of unsealed lines — would step over all of them; the
// sealer vacuums it itself every pendingVacuumEvery lines.
func (s *Sealer) Run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var sealed int
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for ctx.Err() == nil {
			n, _, err := s.SealOnce(ctx, false)
			if err != nil {
				if ctx.Err() == nil {
					s.Log.Warn("audit sealer", "err", err)
				}
				break
			}
			if sealed += max(n, 0); sealed >= pendingVacuumEvery {
				sealed = 0
				if err := s.DB.VacuumAuditQueue(ctx); err != nil && ctx.Err() == nil {
					s.Log.Warn("audit sealer: vacuum of the queue", "err", err)
				}
			}
			if n < sealBatch {
				break
			}
		}
	}
}

// SealOnce seals one batch (ending at the next multiple of
// CheckpointEvents, so that a checkpoint falls on each) and, with a signer,
// signs a checkpoint when one is due or force is set. It returns how many
// events it sealed (-1: another sealer is at work) and the checkpoint.
func (s *Sealer) SealOnce(ctx context.Context, force bool) (int, *Checkpoint, error) {
	var n int
	var cp *Checkpoint
	err := s.DB.InTx(ctx, func(tx pgx.Tx) error {
		// The sealer's lock first (audit_seal takes it again, which the same
		// session may), so that the head read here stays the head.
		var got bool
		var head int64
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(6582955728264977263)`).Scan(&got); err != nil || !got {
			n = -1
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT COALESCE(max(seq), 0) FROM audit_chain`).Scan(&head); err != nil {
			return err
		}
		limit := sealBatch
		if s.Signer != nil {
			limit = int(min(int64(sealBatch), CheckpointEvents-head%CheckpointEvents))
		}
		if err := tx.QueryRow(ctx, `SELECT audit_seal($1)`, limit).Scan(&n); err != nil || n < 0 || s.Signer == nil {
			return err
		}
		var err error
		cp, err = s.checkpoint(ctx, tx, force)
		return err
	})
	if err != nil {
		return 0, nil, translate("seal audit", err)
	}
	return n, cp, nil
}

// checkpoint signs the head when it is due — it moved since the last
// checkpoint and either CheckpointEvery has passed or it is a multiple of
// CheckpointEvents; it did not move, once CheckpointIdleEvery has passed
// (so that a receiver of the checkpoints can tell a quiet server from
// checkpoints that stopped); the first one; or when forced — and records
// it for the webhooks (EventAuditCheckpoint). Times are the database's, so
// that instances whose clocks differ agree on what is due.
func (s *Sealer) checkpoint(ctx context.Context, tx pgx.Tx, force bool) (*Checkpoint, error) {
	var c Checkpoint
	err := tx.QueryRow(ctx, `SELECT seq, hash, date_trunc('microseconds', now()) FROM audit_chain ORDER BY seq DESC LIMIT 1`).
		Scan(&c.Seq, &c.Hash, &c.SignedAt)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var lastSeq int64
	var age float64
	err = tx.QueryRow(ctx, `SELECT seq, extract(epoch FROM now() - signed_at) FROM audit_checkpoints ORDER BY id DESC LIMIT 1`).Scan(&lastSeq, &age)
	if err != nil && err != pgx.ErrNoRows {
		return nil, err
	}
	since := time.Duration(age * float64(time.Second))
	moved := c.Seq != lastSeq
	due := force || err == pgx.ErrNoRows ||
		(moved && (since >= CheckpointEvery || c.Seq%CheckpointEvents == 0)) || (!moved && since >= CheckpointIdleEvery)
	if !due {
		return nil, nil
	}
	c = s.Signer.Sign(c)
	err = tx.QueryRow(ctx, `INSERT INTO audit_checkpoints (seq, hash, signed_at, key_id, signature) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
		c.Seq, c.Hash, c.SignedAt, c.KeyID, c.Signature).Scan(&c.ID)
	if err == nil {
		err = RecordEvent(ctx, tx, NotificationEvent{Kind: EventAuditCheckpoint, Detail: map[string]any{"checkpoint": c}})
	}
	return &c, err
}

// Checkpoints returns the stored checkpoints, oldest first.
func (d *DB) Checkpoints(ctx context.Context) ([]Checkpoint, error) {
	rows, err := d.Pool.Query(ctx, `SELECT id, seq, hash, signed_at, key_id, signature FROM audit_checkpoints ORDER BY seq, id`)
	if err != nil {
		return nil, translate("list checkpoints", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Checkpoint, error) {
		var c Checkpoint
		err := r.Scan(&c.ID, &c.Seq, &c.Hash, &c.SignedAt, &c.KeyID, &c.Signature)
		return c, err
	})
	return list, translate("list checkpoints", err)
}

// VerifyAuditSigned walks the chain as VerifyAudit does and also checks it
// against every signed checkpoint: a checkpoint whose signature does not
// verify with pub, an event whose hash differs from the one a checkpoint
// signed, or a checkpoint beyond the chain's end breaks it. A rewrite of
// history with recomputed hashes passes VerifyAudit but not this.
func (d *DB) VerifyAuditSigned(ctx context.Context, pub ed25519.PublicKey) (ChainReport, error) {
	cps, err := d.Checkpoints(ctx)
	if err != nil {
		return ChainReport{}, err
	}
	bySeq := map[int64][]Checkpoint{}
	for _, c := range cps {
		if !c.Verify(pub) {
			return ChainReport{BrokenAt: c.Seq, Checkpoints: len(cps), Problem: fmt.Sprintf(
				"checkpoint %d (event %d, signed %s) does not verify with this public key (forged, altered, or signed by another key)",
				c.ID, c.Seq, c.SignedAt.UTC().Format(time.RFC3339))}, nil
		}
		bySeq[c.Seq] = append(bySeq[c.Seq], c)
	}
	var lastGood int64
	r, err := d.verifyAudit(ctx, func(seq int64, hash string) string {
		for _, c := range bySeq[seq] {
			if c.Hash != hash {
				return fmt.Sprintf("its hash contradicts the checkpoint signed %s: history was rewritten after it, somewhere in events %d–%d",
					c.SignedAt.UTC().Format(time.RFC3339), lastGood+1, seq)
			}
		}
		if len(bySeq[seq]) > 0 {
			lastGood = seq
		}
		return ""
	})
	if err != nil {
		return r, err
	}
	r.Checkpoints = len(cps)
	var newest int64
	if len(cps) > 0 {
		c := cps[len(cps)-1]
		newest, r.CheckpointSeq, r.CheckpointAt = c.Seq, c.Seq, c.SignedAt
		if r.Intact && c.Seq > r.Events {
			r.Intact, r.BrokenAt, r.Problem = false, r.Events+1, fmt.Sprintf(
				"the chain ends at event %d but a checkpoint signed %s vouches for event %d: events were removed", r.Events,
				c.SignedAt.UTC().Format(time.RFC3339), c.Seq)
		}
	}
	if !r.Intact {
		return r, nil
	}
	// Events sealed long ago that no checkpoint covers: the checkpoints
	// that did were removed (or never made).
	var first, last *int64
	err = d.Pool.QueryRow(ctx, `SELECT min(c.seq), max(c.seq) FROM audit_chain c JOIN audit_events e ON e.id = c.event_id
		WHERE c.seq > $1 AND e.at < now() - make_interval(secs => $2)`,
		newest, checkpointGrace.Seconds()).Scan(&first, &last)
	if err != nil {
		return r, translate("verify audit", err)
	}
	if first != nil {
		r.Intact, r.BrokenAt, r.Problem = false, *first, fmt.Sprintf(
			"no signed checkpoint covers events %d–%d, though they are older than %s: checkpoints were removed, or the instances that sealed them have no signing key",
			*first, *last, checkpointGrace)
	}
	return r, nil
}
