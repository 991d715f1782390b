package db_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/passkey"
)

const passkeyBase = "https://countersign.example"

// passkeyFixture is blockFixture's tool requiring a passkey, and a person
// with a software passkey.
type passkeyFixture struct {
	*blockFixture
	rp   *passkey.RP
	auth *testenv.SoftAuthenticator
	pk   db.Passkey
}

func newPasskeyFixture(t *testing.T) *passkeyFixture {
	t.Helper()
	f := &passkeyFixture{blockFixture: newBlockFixture(t)}
	var err error
	if f.rp, err = passkey.New(passkeyBase); err != nil {
		t.Fatal(err)
	}
	if f.tool, err = f.store.SetToolProof(context.Background(), approval.SystemActor, f.tool.ID, 0, approval.ProofPasskey, ""); err != nil {
		t.Fatal(err)
	}
	f.auth = testenv.NewSoftAuthenticator(t, passkeyBase)
	if f.pk, err = f.store.AddPasskey(context.Background(), f.user, "Laptop", f.auth.Credential(t)); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *passkeyFixture) challenge(a db.Approval, dec approval.Decision) []byte {
	return approval.ProofChallenge(a.ID, a.CallID, a.ArgumentsDigest, dec, dec.Scope())
}

func (f *passkeyFixture) approve(a db.Approval, assertion []byte) (db.Approval, error) {
	return f.store.Answer(context.Background(), a.ID, f.user, db.Answer{Decision: approval.Approve, Assertion: assertion, RP: f.rp})
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	e := approval.AsError(err)
	if e == nil || string(e.Code) != code || e.Kind != approval.KindForbidden {
		t.Fatalf("err = %v, want 403 %s", err, code)
	}
}

// A step-up tool's item offers no standing approval and is approved only
// with a valid assertion over its own challenge for "approve"; every
// refused attempt leaves it pending and is audited.
func TestPasskeyStepUp(t *testing.T) {
	f := newPasskeyFixture(t)
	a, _ := f.pending(t, "turn")
	other, _ := f.pending(t, "turn")
	if a.ProofRequired != approval.ProofPasskey {
		t.Fatalf("proof required = %q", a.ProofRequired)
	}
	if want := []string{"approve", "reject"}; !slices.Equal(a.AvailableDecisions, want) {
		t.Fatalf("available decisions = %v, want %v", a.AvailableDecisions, want)
	}
	stranger := testenv.NewSoftAuthenticator(t, passkeyBase)
	noUV := *f.auth
	noUV.Verified = false
	cases := []struct {
		name      string
		assertion func() []byte
		code      string
	}{
		{"ErrNoAssertion", func() []byte { return nil }, approval.CodePasskeyRequired},
		{"ErrOtherItem", func() []byte { return f.auth.Assert(t, f.challenge(other, approval.Approve)) }, approval.CodePasskeyInvalid},
		{"ErrRejectAsApprove", func() []byte { return f.auth.Assert(t, f.challenge(a, approval.Reject)) }, approval.CodePasskeyInvalid},
		{"ErrNoUserVerification", func() []byte {
			a := noUV.Assert(t, f.challenge(a, approval.Approve))
			f.auth.Counter = noUV.Counter
			return a
		}, approval.CodePasskeyInvalid},
		{"ErrNotThePersonsPasskey", func() []byte { return stranger.Assert(t, f.challenge(a, approval.Approve)) }, approval.CodePasskeyInvalid},
		{"ErrMalformed", func() []byte { return []byte(`{"id":"x"`) }, approval.CodePasskeyInvalid},
		{"ErrOtherOrigin", func() []byte {
			evil := *f.auth
			evil.Origin = "https://evil.example"
			out := evil.Assert(t, f.challenge(a, approval.Approve))
			f.auth.Counter = evil.Counter
			return out
		}, approval.CodePasskeyInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.approve(a, c.assertion())
			wantCode(t, err, c.code)
			if st := f.get(t, a.ID).Status; st != approval.StatusPending {
				t.Fatalf("status = %s, want pending", st)
			}
		})
	}
	if n := countAction(t, f.store, approval.ActionProofRefused); n != len(cases) {
		t.Fatalf("%d refused attempts audited, want %d", n, len(cases))
	}

	t.Run("OK", func(t *testing.T) {
		assertion := f.auth.Assert(t, f.challenge(a, approval.Approve))
		out, err := f.approve(a, assertion)
		if err != nil || out.Status != approval.StatusApproved || out.ProofPasskey != "Laptop" {
			t.Fatalf("approve: %v %s %q", err, out.Status, out.ProofPasskey)
		}
		if proof, _ := f.store.ApprovalProof(context.Background(), a.ID); proof != "passkey" {
			t.Fatalf("proof = %q", proof)
		}
		// The same assertion again: the item is decided, so a conflict.
		if _, err := f.approve(a, assertion); approval.KindOf(err) != approval.KindConflict {
			t.Fatalf("replay: %v, want conflict", err)
		}
	})
	t.Run("ErrCounterDidNotGoUp", func(t *testing.T) {
		f.auth.Counter = 1 // a replayed or cloned passkey
		_, err := f.approve(other, f.auth.Assert(t, f.challenge(other, approval.Approve)))
		wantCode(t, err, approval.CodePasskeyInvalid)
	})
	t.Run("RejectNeedsNoPasskey", func(t *testing.T) {
		out, err := f.store.Answer(context.Background(), other.ID, f.user, db.Answer{Decision: approval.Reject})
		if err != nil || out.Status != approval.StatusRejected {
			t.Fatalf("reject: %v", err)
		}
	})
}

// The database refuses to approve an item that needs a passkey without
// its receipt, whatever path tries (belt and braces).
func TestPasskeyReceiptRequiredByDatabase(t *testing.T) {
	f := newPasskeyFixture(t)
	a, _ := f.pending(t, "turn")
	_, err := f.store.Pool.Exec(context.Background(), `UPDATE approvals SET status = 'approved', scope = 'once' WHERE id = $1`, a.ID)
	if err == nil || !strings.Contains(err.Error(), "needs a passkey receipt") {
		t.Fatalf("direct approval: %v", err)
	}
}

// A check that asks for proof makes the approval of a tool without step-up
// need a passkey, and skips standing grants.
func TestCheckAsksForPasskey(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	plain, _ := f.pending(t, "turn")
	if plain.ProofRequired != approval.ProofNone || !slices.Contains(plain.AvailableDecisions, "always") {
		t.Fatalf("plain item: proof %q, decisions %v", plain.ProofRequired, plain.AvailableDecisions)
	}
	if _, err := f.store.Decide(ctx, plain.ID, f.user, approval.AlwaysAllow, ""); err != nil {
		t.Fatal(err)
	}
	req := db.CheckRequest{CallID: "asks-proof", User: f.user.Subject, ConversationID: "conv", TurnID: "turn",
		Connector: "mail", Tool: "send_email", Arguments: `{"n":1}`, Proof: approval.ProofPasskey}
	res, err := f.store.Check(ctx, f.key, req, db.CheckOptions{Timeout: 60e9, DeniedThreshold: 2})
	if err != nil || res.Approval == nil {
		t.Fatalf("check asking proof: %v %+v (an Always allow grant must not allow it)", err, res.Outcome)
	}
	if res.Approval.ProofRequired != approval.ProofPasskey || slices.Contains(res.Approval.AvailableDecisions, "always") {
		t.Fatalf("item: proof %q, decisions %v", res.Approval.ProofRequired, res.Approval.AvailableDecisions)
	}
	_, err = f.store.Decide(ctx, res.Approval.ID, f.user, approval.Approve, "")
	wantCode(t, err, approval.CodePasskeyRequired)
}

// audit verify's receipts: they verify, and fail naming the event once a
// stored signature or the item's digest is altered.
func TestVerifyReceipts(t *testing.T) {
	f := newPasskeyFixture(t)
	ctx := context.Background()
	a, _ := f.pending(t, "turn")
	if _, err := f.approve(a, f.auth.Assert(t, f.challenge(a, approval.Approve))); err != nil {
		t.Fatal(err)
	}
	rep, err := f.store.VerifyReceipts(ctx)
	if err != nil || !rep.OK() || rep.Checked != 1 {
		t.Fatalf("verify: %v %s", err, rep)
	}
	var event int64
	if err := f.store.Pool.QueryRow(ctx, `SELECT audit_event_id FROM approval_receipts WHERE approval_id = $1`, a.ID).Scan(&event); err != nil {
		t.Fatal(err)
	}
	for _, tamper := range []struct{ name, sql, undo string }{
		{"Signature", `UPDATE approval_receipts SET signature = set_byte(signature, 10, get_byte(signature, 10) # 1) WHERE approval_id = $1`,
			`UPDATE approval_receipts SET signature = set_byte(signature, 10, get_byte(signature, 10) # 1) WHERE approval_id = $1`},
		{"Digest", `UPDATE approvals SET arguments_digest = 'sha256:' || repeat('0', 64) WHERE id = $1`, ""},
	} {
		t.Run(tamper.name, func(t *testing.T) {
			if _, err := f.store.Pool.Exec(ctx, tamper.sql, a.ID); err != nil {
				t.Fatal(err)
			}
			rep, err := f.store.VerifyReceipts(ctx)
			if err != nil || rep.OK() || rep.Failures[0].EventID != event || !strings.Contains(rep.String(), a.ID) {
				t.Fatalf("after altering the %s: %v %s", tamper.name, err, rep)
			}
			if tamper.undo != "" {
				if _, err := f.store.Pool.Exec(ctx, tamper.undo, a.ID); err != nil {
					t.Fatal(err)
				}
				if rep, _ := f.store.VerifyReceipts(ctx); !rep.OK() {
					t.Fatalf("restored: %s", rep)
				}
			}
		})
	}
}

func countAction(t *testing.T, store *db.DB, action string) int {
	t.Helper()
	var n int
	if err := store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE action = $1`, action).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A playbook cannot pre-approve a tool that requires a passkey (a passkey
// signs one call's arguments, which a run has not produced yet), and a
// run's call that asks for proof is not allowed by a pre-approval.
func TestPasskeyToolNotPreapprovable(t *testing.T) {
	ctx := context.Background()
	store, run := preapprovedRun(t)
	res, err := store.Check(ctx, runKey, db.CheckRequest{CallID: "asks", User: "owner-1", ConversationID: "conv", TurnID: "t1",
		Connector: "bank", Tool: "pay", Arguments: `{"amount":1}`, PlaybookRunID: run.ID, Proof: approval.ProofPasskey}, db.CheckOptions{})
	if err != nil || res.Outcome.Verdict != approval.Deny || res.Outcome.Code != approval.CodeApprovalUnavailable {
		t.Fatalf("a run's call asking for proof: %v %+v", err, res.Outcome)
	}
	if got := checkInRun(t, store, runKey, "owner-1", run.ID, "plain"); got.Verdict != approval.Allow {
		t.Fatalf("the same call without proof: %+v", got)
	}
	var toolID int64
	if err := store.Pool.QueryRow(ctx, `SELECT id FROM tools WHERE connector = 'bank' AND name = 'pay'`).Scan(&toolID); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetToolProof(ctx, approval.SystemActor, toolID, 0, approval.ProofPasskey, ""); err != nil {
		t.Fatal(err)
	}
	pb, _, err := store.PlaybookWithPairs(ctx, "pb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.PreApprove(ctx, db.User{Subject: "owner-1"}, "pb", pb.Fingerprint); approval.KindOf(err) != approval.KindUnprocessable ||
		!strings.Contains(err.Error(), "requires a passkey") {
		t.Fatalf("pre-approving a passkey tool: %v", err)
	}
	if got := checkInRun(t, store, runKey, "owner-1", run.ID, "after"); got.Verdict != approval.Deny {
		t.Fatalf("after step-up was turned on, a run's call: %+v", got)
	}
}

// A check asking for proof never joins an earlier item that needs none.
func TestAttachNeverWeakensProof(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	first, req := f.pending(t, "turn")
	req.CallID, req.AttachToPending, req.Proof = "retry", true, approval.ProofPasskey
	res, err := f.store.Check(ctx, f.key, req, db.CheckOptions{Timeout: 60e9, DeniedThreshold: 2})
	if err != nil || res.Approval == nil || res.Approval.ID == first.ID || res.Approval.ProofRequired != approval.ProofPasskey {
		t.Fatalf("joined %v (first %s): %v", res.Approval, first.ID, err)
	}
	req.CallID = "retry-2"
	again, err := f.store.Check(ctx, f.key, req, db.CheckOptions{Timeout: 60e9, DeniedThreshold: 2})
	if err != nil || again.Approval == nil || again.Approval.ID != res.Approval.ID {
		t.Fatalf("a second retry asking proof joins the item that needs it: %v %v", again.Approval, err)
	}
}

// A proof condition limits step-up to the calls it is true for; one that
// cannot be evaluated requires the passkey.
func TestProofCondition(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	var err error
	if f.tool, err = f.store.SetToolProof(ctx, approval.SystemActor, f.tool.ID, 0, approval.ProofPasskey, "args.n > 5"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args string
		want approval.Proof
	}{{`{"n":1}`, approval.ProofNone}, {`{"n":9}`, approval.ProofPasskey}, {`{"m":1}`, approval.ProofPasskey}, {`not json`, approval.ProofPasskey}} {
		t.Run(c.args, func(t *testing.T) {
			res, err := f.store.Check(ctx, f.key, db.CheckRequest{CallID: "c " + c.args, User: f.user.Subject, ConversationID: "conv",
				TurnID: "turn", Connector: "mail", Tool: "send_email", Arguments: c.args},
				db.CheckOptions{Timeout: 60e9, DeniedThreshold: 2, Condition: approval.EvaluateCondition})
			if err != nil || res.Approval == nil || res.Approval.ProofRequired != c.want {
				t.Fatalf("%v %+v", err, res.Approval)
			}
			// Step-up on the tool: standing approval is never offered.
			if slices.Contains(res.Approval.AvailableDecisions, "always") {
				t.Fatalf("decisions %v", res.Approval.AvailableDecisions)
			}
		})
	}
}
