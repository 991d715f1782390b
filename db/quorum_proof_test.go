package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/passkey"
)

// quorumProofFixture is orgFixture with payments.send (two of finance for
// a big payment) also requiring a passkey, and a software passkey for
// each of Finn, Fiona and Sam.
type quorumProofFixture struct {
	*orgFixture
	rp       *passkey.RP
	keys     map[string]*testenv.SoftAuthenticator
	passkeys map[string]db.Passkey
}

func newQuorumProofFixture(t *testing.T) *quorumProofFixture {
	t.Helper()
	ctx := context.Background()
	f := &quorumProofFixture{orgFixture: newOrgFixture(t), keys: map[string]*testenv.SoftAuthenticator{},
		passkeys: map[string]db.Passkey{}}
	var err error
	if f.rp, err = passkey.New(passkeyBase); err != nil {
		t.Fatal(err)
	}
	var toolID int64
	if err := f.store.Pool.QueryRow(ctx, `SELECT id FROM tools WHERE connector = 'payments' AND name = 'send'`).Scan(&toolID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.SetToolProof(ctx, approval.SystemActor, toolID, 0, approval.ProofPasskey, ""); err != nil {
		t.Fatal(err)
	}
	for _, u := range []db.User{f.finn, f.fiona, f.sam} {
		auth := testenv.NewSoftAuthenticator(t, passkeyBase)
		pk, err := f.store.AddPasskey(ctx, u, u.Name+"'s laptop", auth.Credential(t))
		if err != nil {
			t.Fatal(err)
		}
		f.keys[u.Subject], f.passkeys[u.Subject] = auth, pk
	}
	return f
}

// assert is a fresh assertion by subject's passkey over item a's
// challenge for "approve".
func (f *quorumProofFixture) assert(t *testing.T, subject string, a db.Approval) []byte {
	t.Helper()
	return f.keys[subject].Assert(t, approval.ProofChallenge(a.ID, a.CallID, a.ArgumentsDigest, approval.Approve, approval.Approve.Scope()))
}

func (f *quorumProofFixture) approve(u db.User, a db.Approval, assertion []byte) (db.Approval, error) {
	return f.store.Answer(context.Background(), a.ID, u, db.Answer{Decision: approval.Approve, Assertion: assertion, RP: f.rp})
}

// count runs a count(*) query with args.
func (f *orgFixture) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := f.store.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// receiptLine is a stored receipt with the audit line it is linked to.
type receiptLine struct {
	passkeyID, eventID int64
	actor, action      string
	linePasskeyID      int64
}

func (f *quorumProofFixture) receipts(t *testing.T, id string) []receiptLine {
	t.Helper()
	rows, err := f.store.Pool.Query(context.Background(), `SELECT r.passkey_id, COALESCE(r.audit_event_id, 0),
			COALESCE(e.actor_id, ''), COALESCE(e.action, ''), COALESCE((e.detail->>'passkey_id')::bigint, 0)
		FROM approval_receipts r LEFT JOIN audit_events e ON e.id = r.audit_event_id
		WHERE r.approval_id = $1 ORDER BY r.id`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []receiptLine
	for rows.Next() {
		var r receiptLine
		if err := rows.Scan(&r.passkeyID, &r.eventID, &r.actor, &r.action, &r.linePasskeyID); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

const votesOf = `SELECT count(*) FROM approval_votes WHERE approval = $1`

// TestQuorumProof: a two-of-finance rule on a tool that requires a passkey.
// Every approval vote needs its voter's own assertion and leaves its own
// receipt, linked to that vote's audit line; an assertion is no one else's.
func TestQuorumProof(t *testing.T) {
	ctx := context.Background()
	f := newQuorumProofFixture(t)
	a := f.bigPayment(t)
	if a.ProofRequired != approval.ProofPasskey || a.Quorum != 2 || a.DeciderTeam != "finance" {
		t.Fatalf("item: proof %q, quorum %d of %q", a.ProofRequired, a.Quorum, a.DeciderTeam)
	}

	// Finn without an assertion: refused (403), no vote, no receipt,
	// the refusal audited.
	_, err := f.approve(f.finn, a, nil)
	wantCode(t, err, approval.CodePasskeyRequired)
	if n := f.count(t, votesOf, a.ID); n != 0 {
		t.Fatalf("%d votes after an approval without a passkey, want 0", n)
	}
	if n := f.count(t, `SELECT count(*) FROM approval_receipts WHERE approval_id = $1`, a.ID); n != 0 {
		t.Fatalf("%d receipts after an approval without a passkey", n)
	}
	if n := f.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = $2 AND actor_id = 'finn'`,
		a.ID, approval.ActionProofRefused); n != 1 {
		t.Fatalf("%d refusals audited, want 1", n)
	}

	// Finn with his passkey: 1 of 2, with his own receipt.
	finnAssertion := f.assert(t, "finn", a)
	got, err := f.approve(f.finn, a, finnAssertion)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != approval.StatusPending || got.ApprovalsIn != 1 {
		t.Fatalf("after Finn: %s with %d approvals, want pending with 1", got.Status, got.ApprovalsIn)
	}
	if rs := f.receipts(t, a.ID); len(rs) != 1 || rs[0].passkeyID != f.passkeys["finn"].ID || rs[0].eventID == 0 || rs[0].actor != "finn" {
		t.Fatalf("receipts after Finn's vote: %+v", rs)
	}

	// Fiona replays Finn's assertion, then sends a fresh one made by
	// Finn's passkey: neither is hers.
	for name, assertion := range map[string][]byte{"Replayed": finnAssertion, "FinnsFresh": f.assert(t, "finn", a)} {
		_, err := f.approve(f.fiona, a, assertion)
		wantCode(t, err, approval.CodePasskeyInvalid)
		if n := f.count(t, votesOf, a.ID); n != 1 {
			t.Fatalf("%s: %d votes, want Finn's only", name, n)
		}
		if st := f.get(t, a.ID, f.fiona).Status; st != approval.StatusPending {
			t.Fatalf("%s: %s", name, st)
		}
	}
	// Finn again, with a fresh assertion of his own: his vote counts once.
	if _, err := f.approve(f.finn, a, f.assert(t, "finn", a)); approval.KindOf(err) != approval.KindConflict {
		t.Fatalf("Finn's second approval: %v, want a conflict", err)
	}
	if rs := f.receipts(t, a.ID); len(rs) != 1 {
		t.Fatalf("%d receipts after refused attempts, want Finn's only", len(rs))
	}

	// Fiona with her passkey: two of finance, approved.
	got, err = f.approve(f.fiona, a, f.assert(t, "fiona", a))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != approval.StatusApproved || got.ApprovalsIn != 2 {
		t.Fatalf("after Fiona: %s with %d approvals, want approved with 2", got.Status, got.ApprovalsIn)
	}
	if proof, err := f.store.ApprovalProof(ctx, a.ID); err != nil || proof != "passkey" {
		t.Fatalf("proof %q %v", proof, err)
	}

	// Two receipts, each linked to its own vote's audit line.
	rs := f.receipts(t, a.ID)
	if len(rs) != 2 {
		t.Fatalf("%d receipts, want one per approving person", len(rs))
	}
	for i, who := range []string{"finn", "fiona"} {
		r := rs[i]
		if r.eventID == 0 || r.actor != who || r.action != approval.ActionApproved || r.passkeyID != f.passkeys[who].ID ||
			r.linePasskeyID != r.passkeyID {
			t.Errorf("receipt %d: %+v, want %s's passkey %d linked to %s's approval line", i, r, who, f.passkeys[who].ID, who)
		}
	}
	if rs[0].eventID == rs[1].eventID {
		t.Errorf("both receipts link audit line %d", rs[0].eventID)
	}
	rep, err := f.store.VerifyReceipts(ctx)
	if err != nil || !rep.OK() || rep.Checked != 2 {
		t.Fatalf("audit verify's receipts: %v %s", err, rep)
	}
	claimed, err := f.store.Claim(ctx, f.mayaKey, a.ID, a.CallID, a.ArgumentsDigest)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed.DecidedBy) != 2 || claimed.DecidedBy[0] != "Finn" || claimed.DecidedBy[1] != "Fiona" {
		t.Errorf("decided by %v", claimed.DecidedBy)
	}
	if rep, err := f.store.VerifyReceipts(ctx); err != nil || !rep.OK() {
		t.Fatalf("receipts after the claim: %v %s", err, rep)
	}
}

// TestQuorumDelegate: Finn away, Sam decides for him. Sam's vote on a
// two-of-finance item is Finn's vote: recorded under Finn's subject, its
// audit line naming both; Finn cannot vote again; it counts towards the
// quorum as Finn's. On a tool that requires a passkey, Sam signs with his
// own passkey and the receipt is linked to his line for Finn.
func TestQuorumDelegate(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	if _, err := f.store.StartDelegation(ctx, f.finn, "sam@example.com", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	a := f.bigPayment(t)
	if _, err := f.store.Decide(ctx, a.ID, f.maya, approval.Approve, ""); approval.KindOf(err) != approval.KindNotFound {
		t.Fatalf("Maya, the owner: %v", err)
	}
	got, err := f.store.Decide(ctx, a.ID, f.sam, approval.Approve, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != approval.StatusPending || got.ApprovalsIn != 1 {
		t.Fatalf("after Sam for Finn: %s with %d approvals", got.Status, got.ApprovalsIn)
	}
	f.wantVote(t, a.ID, "finn", f.sam.ID)
	var actor, onBehalf, onBehalfName string
	if err := f.store.Pool.QueryRow(ctx, `SELECT actor_id, COALESCE(detail->>'on_behalf_of', ''), COALESCE(detail->>'on_behalf_of_name', '')
		FROM audit_events WHERE approval_id = $1 AND action = $2`, a.ID, approval.ActionApproved).Scan(&actor, &onBehalf, &onBehalfName); err != nil {
		t.Fatal(err)
	}
	if actor != "sam" || onBehalf != "finn" || onBehalfName != "Finn" {
		t.Fatalf("audit line: actor %q on behalf of %q (%q), want sam for finn (Finn)", actor, onBehalf, onBehalfName)
	}

	// Finn, back, approves too: one vote for the pair.
	_, err = f.store.Decide(ctx, a.ID, f.finn, approval.Approve, "")
	if e := approval.AsError(err); e == nil || e.Kind != approval.KindConflict || e.Code != approval.CodeAlreadyDecided {
		t.Fatalf("Finn after Sam voted for him: %v, want already answered", err)
	}
	// Sam again: still Finn's one vote.
	if _, err := f.store.Decide(ctx, a.ID, f.sam, approval.Approve, ""); approval.KindOf(err) != approval.KindConflict {
		t.Fatalf("Sam again: %v, want a conflict", err)
	}
	if n := f.count(t, votesOf, a.ID); n != 1 {
		t.Fatalf("%d votes, want 1", n)
	}
	if got := f.get(t, a.ID, f.fiona); got.Status != approval.StatusPending || got.ApprovalsIn != 1 {
		t.Fatalf("after refused second votes: %s with %d", got.Status, got.ApprovalsIn)
	}
	got, err = f.store.Decide(ctx, a.ID, f.fiona, approval.Approve, "")
	if err != nil || got.Status != approval.StatusApproved || got.ApprovalsIn != 2 {
		t.Fatalf("Fiona completes the quorum: %v %s %d", err, got.Status, got.ApprovalsIn)
	}

	t.Run("WithPasskey", func(t *testing.T) {
		pf := newQuorumProofFixture(t)
		if _, err := pf.store.StartDelegation(ctx, pf.finn, "sam@example.com", time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		a := pf.bigPayment(t)
		// Finn's assertion sent by Sam: not Sam's passkey.
		_, err := pf.approve(pf.sam, a, pf.assert(t, "finn", a))
		wantCode(t, err, approval.CodePasskeyInvalid)
		if _, err := pf.approve(pf.sam, a, nil); approval.AsError(err) == nil || approval.AsError(err).Code != approval.CodePasskeyRequired {
			t.Fatalf("Sam without a passkey: %v", err)
		}
		got, err := pf.approve(pf.sam, a, pf.assert(t, "sam", a))
		if err != nil || got.ApprovalsIn != 1 {
			t.Fatalf("Sam with his passkey for Finn: %v %d", err, got.ApprovalsIn)
		}
		pf.wantVote(t, a.ID, "finn", pf.sam.ID)
		rs := pf.receipts(t, a.ID)
		if len(rs) != 1 || rs[0].passkeyID != pf.passkeys["sam"].ID || rs[0].actor != "sam" || rs[0].eventID == 0 {
			t.Fatalf("receipt of Sam's vote for Finn: %+v", rs)
		}
		if n := pf.count(t, `SELECT count(*) FROM audit_events WHERE id = $1 AND detail->>'on_behalf_of' = 'finn'`, rs[0].eventID); n != 1 {
			t.Fatalf("the receipt's line does not name Finn")
		}
		if _, err := pf.approve(pf.finn, a, pf.assert(t, "finn", a)); approval.KindOf(err) != approval.KindConflict {
			t.Fatalf("Finn after Sam voted for him: %v", err)
		}
		got, err = pf.approve(pf.fiona, a, pf.assert(t, "fiona", a))
		if err != nil || got.Status != approval.StatusApproved {
			t.Fatalf("Fiona: %v %s", err, got.Status)
		}
		if rep, err := pf.store.VerifyReceipts(ctx); err != nil || !rep.OK() || rep.Checked != 2 {
			t.Fatalf("audit verify's receipts: %v %s", err, rep)
		}
	})
}

// wantVote checks that item id has one vote, recorded under subject and
// cast by user reviewerID.
func (f *orgFixture) wantVote(t *testing.T, id, subject string, reviewerID int64) {
	t.Helper()
	var sub string
	var rev int64
	if err := f.store.Pool.QueryRow(context.Background(), `SELECT subject, reviewer_id FROM approval_votes WHERE approval = $1`,
		id).Scan(&sub, &rev); err != nil {
		t.Fatal(err)
	}
	if sub != subject || rev != reviewerID {
		t.Fatalf("vote under %q by user %d, want under %q by %d", sub, rev, subject, reviewerID)
	}
}

// TestQuorumProofConcurrent: three of finance approve a two-person passkey
// item at once, each with a valid assertion. Exactly two votes count; the
// third finds it decided; each counted vote keeps one receipt linked to
// its own line, and no receipt of a refused vote survives.
func TestQuorumProofConcurrent(t *testing.T) {
	ctx := context.Background()
	f := newQuorumProofFixture(t)
	auth := testenv.NewSoftAuthenticator(t, passkeyBase)
	// A third finance member who may decide: Frank.
	frank, err := f.store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: "frank", Name: "Frank",
		Email: "frank@example.com", EmailVerified: true, Groups: []string{"finance"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.passkeys["frank"], err = f.store.AddPasskey(ctx, frank, "Frank's laptop", auth.Credential(t)); err != nil {
		t.Fatal(err)
	}
	f.keys["frank"] = auth
	for round := 0; round < 5; round++ {
		a := f.bigPayment(t)
		voters := []db.User{f.finn, f.fiona, frank}
		assertions := make([][]byte, len(voters))
		for i, u := range voters {
			assertions[i] = f.assert(t, u.Subject, a)
		}
		errs := make([]error, len(voters))
		var wg sync.WaitGroup
		for i, u := range voters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = f.approve(u, a, assertions[i])
			}()
		}
		wg.Wait()
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case approval.KindOf(err) != approval.KindConflict:
				t.Fatalf("round %d: %s: %v", round, voters[i].Subject, err)
			}
		}
		got := f.get(t, a.ID, f.finn)
		if ok != 2 || got.Status != approval.StatusApproved || got.ApprovalsIn != 2 {
			t.Fatalf("round %d: %d recorded, %s with %d approvals; want 2, approved, 2", round, ok, got.Status, got.ApprovalsIn)
		}
		rs := f.receipts(t, a.ID)
		if len(rs) != 2 || rs[0].eventID == 0 || rs[1].eventID == 0 || rs[0].eventID == rs[1].eventID {
			t.Fatalf("round %d: receipts %+v", round, rs)
		}
		for _, r := range rs {
			if r.passkeyID != f.passkeys[r.actor].ID || r.linePasskeyID != r.passkeyID {
				t.Fatalf("round %d: receipt %+v not linked to its voter's line", round, r)
			}
		}
	}
	if rep, err := f.store.VerifyReceipts(ctx); err != nil || !rep.OK() || rep.Checked != 10 {
		t.Fatalf("audit verify's receipts: %v %s", err, rep)
	}
}
