package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/passkey"
)

// audit verify re-checks every passkey receipt: it passes, then fails
// naming the event once the approved item's digest is altered.
func TestAuditVerifyReceiptsCommand(t *testing.T) {
	store, u := testenv.OpenDB(t)
	ctx := context.Background()
	const base = "https://countersign.example"
	if err := store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "bank", DisplayName: "Bank", Kind: "connector",
		Tools: []db.ToolSync{{Name: "pay", DisplayName: "Pay"}}}); err != nil {
		t.Fatal(err)
	}
	tool, err := store.SetToolPolicy(ctx, approval.SystemActor, "bank", "pay", approval.Policy{Mode: approval.ModeRequireApproval})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetToolProof(ctx, approval.SystemActor, tool.ID, 0, approval.ProofPasskey, ""); err != nil {
		t.Fatal(err)
	}
	person, err := store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: "payer", Email: "p@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	auth := testenv.NewSoftAuthenticator(t, base)
	if _, err := store.AddPasskey(ctx, person, "Laptop", auth.Credential(t)); err != nil {
		t.Fatal(err)
	}
	_, key, err := store.CreateAPIKey(ctx, "runtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := store.Check(ctx, key, db.CheckRequest{CallID: "c1", User: "payer", ConversationID: "conv", TurnID: "t",
		Connector: "bank", Tool: "pay", Arguments: `{"amount":12000}`}, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
	if err != nil || res.Approval == nil {
		t.Fatal(err, res.Outcome)
	}
	a := *res.Approval
	rp, _ := passkey.New(base)
	assertion := auth.Assert(t, approval.ProofChallenge(a.ID, a.CallID, a.ArgumentsDigest, approval.Approve, approval.ScopeOnce))
	if _, err := store.Answer(ctx, a.ID, person, db.Answer{Decision: approval.Approve, Assertion: assertion, RP: rp}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"COUNTERSIGN_DATABASE_URL": u}
	code, out, _ := runCmd(t, env, "audit", "verify")
	if code != 0 || !strings.Contains(out, "1 passkey receipts verified") {
		t.Fatalf("exit %d: %s", code, out)
	}
	var event int64
	if err := store.Pool.QueryRow(ctx, `SELECT audit_event_id FROM approval_receipts`).Scan(&event); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pool.Exec(ctx, `UPDATE approvals SET arguments_digest = $2 WHERE id = $1`, a.ID, approval.Digest(`{"amount":99000}`)); err != nil {
		t.Fatal(err)
	}
	code, out, errb := runCmd(t, env, "audit", "verify")
	if code != 1 || !strings.Contains(out, fmt.Sprintf("event %d", event)) || !strings.Contains(out, a.ID) || !strings.Contains(errb, "passkey receipt") {
		t.Fatalf("after altering the digest, exit %d: %s %s", code, out, errb)
	}
}
