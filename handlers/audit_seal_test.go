package handlers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
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
	if _, body := admin.Get("/admin/audit"); strings.Contains(body, `data-testid="unsealed"`) || strings.Contains(body, "not sealed yet") {
		t.Fatal("a sealed line is shown as unsealed")
	}
}
