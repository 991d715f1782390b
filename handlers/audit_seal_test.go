package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/web"
	"github.com/jackc/pgx/v5"
)

// A committed line the sealer cannot chain yet (an older transaction is
// still open) is shown as not sealed, on the list and by verify; once
// sealed, it is not.
func TestAuditScreenShowsUnsealed(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	ctx := context.Background()
	if err := l.DB.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	older, err := l.DB.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer older.Rollback(ctx)
	if _, err := older.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil { // holds the horizon
		t.Fatal(err)
	}
	if err := l.DB.InTx(ctx, func(tx pgx.Tx) error {
		return db.RecordAudit(ctx, tx, approval.AuditEvent{Actor: approval.SystemActor, Action: approval.ActionExpired})
	}); err != nil {
		t.Fatal(err)
	}
	if _, body := admin.Get("/admin/audit"); strings.Count(body, `data-testid="unsealed"`) != 1 ||
		!strings.Contains(body, "1 newer not sealed yet") {
		t.Fatal("the unsealed line is not shown as such")
	}
	if _, body := admin.Get("/admin/audit/verify"); !strings.Contains(body, "1 newer events not sealed yet") {
		t.Fatal("verify does not report the unsealed window")
	}
	if err := older.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.DB.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	_, body := admin.Get("/admin/audit")
	if strings.Contains(body, `data-testid="unsealed"`) || strings.Contains(body, "not sealed yet") {
		t.Fatal("a sealed line is shown as unsealed")
	}
	// The head of the chain is named: its place and the start of its hash.
	var seq int64
	var hash string
	if err := l.DB.Pool.QueryRow(ctx, `SELECT seq, hash FROM audit_chain ORDER BY seq DESC LIMIT 1`).Scan(&seq, &hash); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`Tamper-evident chain: %d events, latest hash <span class="mono">%s…</span>`, seq, hash[:16]); !strings.Contains(body, want) {
		t.Fatalf("the screen does not name the chain's head (%q)", want)
	}
}

// The screen's verification checks the chain against the signed
// checkpoints when the server signs them: a rewrite of history with
// recomputed hashes passes the chain alone, and is caught here. Without a
// key the screen says that checkpoints were not checked.
func TestAuditVerifyChecksSignedCheckpoints(t *testing.T) {
	signer, _, _ := testenv.AuditSigner(t)
	ctx := context.Background()
	for _, signed := range []bool{true, false} {
		var opts []testenv.Option
		if signed {
			opts = append(opts, func(c *web.Config) { c.AuditSigner = signer })
		}
		l := newLoop(t, opts...)
		admin := l.NewBrowser()
		admin.SignIn("admin")
		sealer := &db.Sealer{DB: l.DB, Signer: signer, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if err := l.DB.SealAll(ctx); err != nil {
			t.Fatal(err)
		}
		for {
			// The server's own sealer may hold the sealing lock (-1): again.
			n, cp, err := sealer.SealOnce(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			if n >= 0 {
				if cp == nil {
					t.Fatal("no checkpoint")
				}
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, body := admin.Get("/admin/audit/verify"); !strings.Contains(body, "chain intact") {
			t.Fatalf("signed %v, before the rewrite: %s", signed, chainResult(body))
		}
		testenv.AsAuditAdmin(t, l.DB, `UPDATE audit_events SET action = 'rejected' WHERE `+testenv.AuditEventAt(2))
		testenv.RechainAudit(t, l.DB, 2)
		_, body := admin.Get("/admin/audit/verify")
		switch {
		case signed && (!strings.Contains(chainResult(body), "chain broken") || !strings.Contains(body, "contradicts the checkpoint") ||
			!strings.Contains(body, signer.KeyID)):
			t.Fatalf("a rewrite with recomputed hashes was not caught with the key: %s", chainResult(body))
		case !signed && (!strings.Contains(chainResult(body), "chain intact") || !strings.Contains(body, "Signed checkpoints were not checked")):
			t.Fatalf("without a key: %s", body)
		}
	}
}

// chainResult is the verification's result line on the page.
func chainResult(body string) string {
	i := strings.Index(body, `data-testid="chain-result"`)
	if i < 0 {
		return "(no result on the page)"
	}
	rest := body[i:]
	if j := strings.Index(rest, "</p>"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
