package db

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ChainReport is the result of walking the audit chain.
type ChainReport struct {
	Events   int64 // sealed events read
	Intact   bool
	BrokenAt int64  // seq of the first broken link; 0 for a line outside the chain
	Problem  string // what is wrong there
	LastHash string
	// Unsealed counts committed events not chained yet, and UnsealedFor is
	// the age of the oldest of them: the window in which an event is
	// stored but not yet covered by the chain.
	Unsealed    int64
	UnsealedFor time.Duration
	// Checkpoints is how many signed checkpoints were checked (0 when no
	// public key was given), and CheckpointSeq and CheckpointAt the event
	// the newest vouches for and when it was signed.
	Checkpoints   int
	CheckpointSeq int64
	CheckpointAt  time.Time
}

// String is the report in words.
func (r ChainReport) String() string {
	var s string
	if r.Intact {
		s = fmt.Sprintf("%d events, chain intact (last hash %s)", r.Events, short(r.LastHash))
	} else if r.BrokenAt == 0 {
		s = fmt.Sprintf("chain broken: %s (%d events read)", r.Problem, r.Events)
	} else {
		s = fmt.Sprintf("chain broken at event %d: %s (%d events read)", r.BrokenAt, r.Problem, r.Events)
	}
	if r.Checkpoints > 0 {
		s += fmt.Sprintf("; %d signed checkpoints checked, the newest for event %d, signed %s", r.Checkpoints, r.CheckpointSeq,
			r.CheckpointAt.UTC().Format(time.RFC3339))
	}
	if r.Unsealed > 0 {
		s += fmt.Sprintf("; %d newer events not sealed yet (oldest %s ago)", r.Unsealed, r.UnsealedFor.Round(time.Millisecond))
	} else {
		s += "; no unsealed events"
	}
	return s
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16] + "…"
	}
	return h
}

// VerifyAudit walks the sealed chain in order, recomputing each event's
// hash, and reports the first broken link (an altered event, a missing one,
// or one whose previous-hash does not match) and the unsealed window.
func (d *DB) VerifyAudit(ctx context.Context) (ChainReport, error) {
	return d.verifyAudit(ctx, nil)
}

// verifyAudit walks the chain; check, when set, is called for every sealed
// event and may report the first contradiction with a signed checkpoint.
func (d *DB) verifyAudit(ctx context.Context, check func(seq int64, hash string) string) (ChainReport, error) {
	r := ChainReport{Intact: true}
	var oldest float64
	if err := d.Pool.QueryRow(ctx, `SELECT count(*), COALESCE(extract(epoch FROM clock_timestamp() - min(at)), 0)::float8
		FROM audit_unsealed`).Scan(&r.Unsealed, &oldest); err != nil {
		return ChainReport{}, translate("verify audit", err)
	}
	r.UnsealedFor = time.Duration(oldest * float64(time.Second))
	// A chain entry whose event is gone recomputes to "" (the event was
	// removed).
	rows, err := d.Pool.Query(ctx, `SELECT c.seq, c.prev_hash, c.hash, COALESCE(audit_chain_hash(c.prev_hash, c.seq, e), ''), e.id IS NULL
		FROM audit_chain c LEFT JOIN audit_events e ON e.id = c.event_id ORDER BY c.seq`)
	if err != nil {
		return ChainReport{}, translate("verify audit", err)
	}
	defer rows.Close()
	prev := strings.Repeat("0", 64)
	var want int64 = 1
	for rows.Next() {
		var seq int64
		var prevHash, hash, recomputed string
		var removed bool
		if err := rows.Scan(&seq, &prevHash, &hash, &recomputed, &removed); err != nil {
			return ChainReport{}, translate("verify audit", err)
		}
		r.Events++
		switch {
		case !r.Intact:
			continue
		case seq != want:
			r.Intact, r.BrokenAt, r.Problem = false, want, fmt.Sprintf("event %d is missing (next is %d)", want, seq)
		case removed:
			r.Intact, r.BrokenAt, r.Problem = false, seq, fmt.Sprintf("event %d is missing (its seal is there, the event is not)", seq)
		case prevHash != prev:
			r.Intact, r.BrokenAt, r.Problem = false, seq, "its link to the previous event does not match (an event before it was changed or removed)"
		case recomputed != hash:
			r.Intact, r.BrokenAt, r.Problem = false, seq, "its content does not match its hash (the event was altered)"
		}
		if r.Intact && check != nil {
			if p := check(seq, hash); p != "" {
				r.Intact, r.BrokenAt, r.Problem = false, seq, p
			}
		}
		prev, want = hash, seq+1
		r.LastHash = hash
	}
	if err := rows.Err(); err != nil || !r.Intact {
		return r, translate("verify audit", err)
	}
	// Every line is sealed or waiting in the sealer's queue: one taken out
	// of both would never be sealed, and the walk above would not see it.
	var lost, first int64
	if err := d.Pool.QueryRow(ctx, `SELECT count(*), COALESCE(min(e.id), 0) FROM audit_events e
		WHERE NOT EXISTS (SELECT 1 FROM audit_chain c WHERE c.event_id = e.id)
		  AND NOT EXISTS (SELECT 1 FROM audit_pending p WHERE p.xid = e.xid AND p.id = e.id)`).Scan(&lost, &first); err != nil {
		return r, translate("verify audit", err)
	}
	if lost > 0 {
		r.Intact, r.Problem = false, fmt.Sprintf("%d events (the first id %d) are neither sealed nor waiting for their seal: they were taken out of the sealer's queue", lost, first)
	}
	return r, nil
}
