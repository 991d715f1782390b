package db_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

type blockFixture struct {
	store *db.DB
	key   db.APIKey
	user  db.User
	tool  db.Tool
	n     int
}

func newBlockFixture(t *testing.T) *blockFixture {
	t.Helper()
	ctx := context.Background()
	store, _ := testenv.OpenDB(t)
	err := store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: []db.ToolSync{{Name: "send_email", DisplayName: "Send email"}}})
	if err != nil {
		t.Fatal(err)
	}
	f := &blockFixture{store: store}
	if f.user, err = store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: "member", Email: "m@example.com"}); err != nil {
		t.Fatal(err)
	}
	if _, f.key, err = store.CreateAPIKey(ctx, "runtime", nil); err != nil {
		t.Fatal(err)
	}
	f.setMode(t, approval.ModeRequireApproval)
	return f
}

func (f *blockFixture) setMode(t *testing.T, m approval.Mode) {
	t.Helper()
	var err error
	if f.tool, err = f.store.SetToolPolicy(context.Background(), approval.SystemActor, "mail", "send_email",
		approval.Policy{Mode: m, StandingApproval: true}); err != nil {
		t.Fatal(err)
	}
}

// runtimeKey creates another API key and returns it as a runtime sends it.
func (f *blockFixture) runtimeKey(t *testing.T) string {
	t.Helper()
	raw, _, err := f.store.CreateAPIKey(context.Background(), "runtime "+fmt.Sprint(f.n), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.n++
	return raw
}

// keyOf is the key a runtime sends as raw.
func (f *blockFixture) keyOf(t *testing.T, raw string) db.APIKey {
	t.Helper()
	key, err := f.store.AuthenticateAPIKey(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// keyCheck runs req as a runtime's check sent with raw, by the fixture's
// user in conversation "conv" of the "mail" connector.
func (f *blockFixture) keyCheck(ctx context.Context, raw string, req db.CheckRequest) (db.CheckResult, error) {
	req.User, req.ConversationID, req.Connector = f.user.Subject, "conv", "mail"
	res, _, err := f.store.CheckWithAPIKey(ctx, raw, req, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
	return res, err
}

// pending creates a pending item in turn and returns it with its request.
func (f *blockFixture) pending(t *testing.T, turn string) (db.Approval, db.CheckRequest) {
	t.Helper()
	f.n++
	req := db.CheckRequest{CallID: fmt.Sprint("call-", f.n), User: f.user.Subject, ConversationID: "conv", TurnID: turn,
		Connector: "mail", Tool: "send_email", Arguments: fmt.Sprintf(`{"n":%d}`, f.n)}
	res, err := f.store.Check(context.Background(), f.key, req, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
	if err != nil || res.Approval == nil {
		t.Fatalf("check: %v %+v", err, res.Outcome)
	}
	return *res.Approval, req
}

// lockTool holds the tool's row in an open transaction, as an admin's
// policy change does, until the caller ends the returned transaction.
func (f *blockFixture) lockTool(t *testing.T) pgx.Tx {
	t.Helper()
	return f.holding(t, `SELECT 1 FROM tools WHERE id = $1 FOR UPDATE`, f.tool.ID)
}

// holding runs sql in a transaction left open, which the test ends or its
// cleanup rolls back, so that what sql locked stays locked until then.
func (f *blockFixture) holding(t *testing.T, sql string, args ...any) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := f.store.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
	return tx
}

// refusePoisonLines makes the audit lines of any turn whose id starts
// with "poison" impossible to store.
func (f *blockFixture) refusePoisonLines(t *testing.T) {
	t.Helper()
	if _, err := f.store.Pool.Exec(context.Background(), `
		CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.turn_id LIKE 'poison%' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_poison BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_poison()`); err != nil {
		t.Fatal(err)
	}
}

func (f *blockFixture) get(t *testing.T, id string) db.Approval {
	t.Helper()
	a, err := f.store.ApprovalForKey(context.Background(), id, f.key)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// internal reports an error that is not a domain refusal (a deadlock, say).
func internal(err error) bool { return err != nil && approval.KindOf(err) == approval.KindInternal }

// A claim racing a block: whichever commits first, the outcome is one of
// two consistent ones, and neither side fails.
func TestBlockRacesClaim(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	for round := 0; round < 8; round++ {
		a, req := f.pending(t, "turn")
		if _, err := f.store.Decide(ctx, a.ID, f.user, approval.Approve, ""); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var claimErr, blockErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, claimErr = f.store.Claim(ctx, f.key, a.ID, req.CallID, approval.Digest(req.Arguments))
		}()
		go func() {
			defer wg.Done()
			_, blockErr = f.store.UpdatePolicy(ctx, approval.SystemActor, a.ToolID, 0, approval.Policy{Mode: approval.ModeBlock})
		}()
		wg.Wait()
		if blockErr != nil || internal(claimErr) {
			t.Fatalf("round %d: block %v, claim %v", round, blockErr, claimErr)
		}
		got := f.get(t, a.ID)
		switch {
		case claimErr == nil && got.Status == approval.StatusConsumed:
		case claimErr != nil && approval.AsError(claimErr).Code == string(approval.CodeBlockedByPolicy) &&
			got.Status == approval.StatusCancelled && got.Code() == approval.CodeBlockedByPolicy:
		default:
			t.Fatalf("round %d: claim %v, item %s %s", round, claimErr, got.Status, got.Code())
		}
		f.setMode(t, approval.ModeRequireApproval)
	}
}

// A decision racing a block: once the block has committed the item is
// cancelled with blocked_by_policy, whether the decision came first or not.
func TestBlockRacesDecision(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	for round := 0; round < 8; round++ {
		a, _ := f.pending(t, "turn")
		var wg sync.WaitGroup
		var decideErr, blockErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, decideErr = f.store.Decide(ctx, a.ID, f.user, approval.Approve, "")
		}()
		go func() {
			defer wg.Done()
			_, blockErr = f.store.UpdatePolicy(ctx, approval.SystemActor, a.ToolID, 0, approval.Policy{Mode: approval.ModeBlock})
		}()
		wg.Wait()
		if blockErr != nil || internal(decideErr) {
			t.Fatalf("round %d: block %v, decide %v", round, blockErr, decideErr)
		}
		if got := f.get(t, a.ID); got.Status != approval.StatusCancelled || got.Code() != approval.CodeBlockedByPolicy {
			t.Fatalf("round %d: decide %v, item %s %s", round, decideErr, got.Status, got.Code())
		}
		f.setMode(t, approval.ModeRequireApproval)
	}
}

// A stopped turn and a block over the same items end each item once and
// never wait on each other for good.
func TestBlockAndTurnCancelOverlap(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 20; i++ {
		a, _ := f.pending(t, "turn")
		if i%2 == 0 {
			if _, err := f.store.Decide(ctx, a.ID, f.user, approval.Approve, ""); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, a.ID)
	}
	var wg sync.WaitGroup
	var cancelErr, blockErr error
	var cancelled int
	wg.Add(2)
	go func() {
		defer wg.Done()
		cancelled, cancelErr = f.store.CancelTurn(ctx, f.key, f.user.Subject, "conv", "turn")
	}()
	go func() {
		defer wg.Done()
		_, blockErr = f.store.UpdatePolicy(ctx, approval.SystemActor, f.tool.ID, 0, approval.Policy{Mode: approval.ModeBlock})
	}()
	wg.Wait()
	if cancelErr != nil || blockErr != nil {
		t.Fatalf("cancel %v, block %v", cancelErr, blockErr)
	}
	blocked := 0
	for _, id := range ids {
		a := f.get(t, id)
		if a.Status != approval.StatusCancelled {
			t.Fatalf("%s is %s", id, a.Status)
		}
		if a.Code() == approval.CodeBlockedByPolicy {
			blocked++
		}
	}
	if cancelled+blocked != len(ids) {
		t.Fatalf("turn cancel ended %d, block ended %d, of %d", cancelled, blocked, len(ids))
	}
	var lines int
	if err := f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'cancelled'`).Scan(&lines); err != nil {
		t.Fatal(err)
	}
	if lines != len(ids) {
		t.Fatalf("cancelled audit lines %d, want %d", lines, len(ids))
	}
}
