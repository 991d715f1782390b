package db

import (
	"context"
	"errors"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/passkey"
	"github.com/jackc/pgx/v5"
)

// Passkey step-up (invariant 16): an item whose approval needs a passkey is
// approved only with a WebAuthn assertion, by one of the deciding person's
// passkeys, with user verification, over the item's ProofChallenge for the
// answer given. It is verified inside the decision's transaction, before
// its UPDATE; the assertion is stored as the item's receipt (which the
// approvals_proof_receipt trigger requires) and linked to the decision's
// audit line.

// errProofRequired refuses an approval without an assertion.
var errProofRequired = approval.Errorf(approval.KindForbidden, approval.CodePasskeyRequired,
	"This call needs your passkey to approve, and none was used. Nothing was decided: press Approve and confirm with your passkey. "+
		"If you have none, add one in Settings.")

// errProofInvalid refuses an approval whose assertion does not verify.
var errProofInvalid = approval.Errorf(approval.KindForbidden, approval.CodePasskeyInvalid,
	"Your passkey’s answer does not match this call and this decision, is not from one of your passkeys, "+
		"or did not verify you (PIN or biometric). Nothing was decided; try Approve again.")

// proofReceipt is a verified assertion, ready to be stored with the
// decision.
type proofReceipt struct {
	id        int64 // approval_receipts.id
	passkey   Passkey
	assertion passkey.Assertion
	rp        *passkey.RP
	decision  approval.Decision
}

// proveAnswer verifies the assertion of answer ans on item a when the item
// needs one, and stores it as the item's receipt; nil when the answer needs
// no passkey. The item is locked first, so that of two approvals of it the
// second waits and then finds it decided; an item no longer pending needs
// no proof here, as the decision's UPDATE will not match it.
func proveAnswer(ctx context.Context, tx pgx.Tx, a Approval, reviewer User, ans Answer) (*proofReceipt, error) {
	if !approval.NeedsProof(a.ProofRequired, ans.Decision) {
		return nil, nil
	}
	var pending bool
	if err := tx.QueryRow(ctx, `SELECT status = 'pending' FROM approvals WHERE id = $1 FOR UPDATE`, a.ID).Scan(&pending); err != nil {
		return nil, err
	}
	if !pending {
		return nil, nil
	}
	if len(ans.Assertion) == 0 {
		return nil, errProofRequired
	}
	if ans.RP == nil {
		return nil, errors.New("db: a passkey was sent but no relying party is configured")
	}
	keys, err := livePasskeys(ctx, tx, reviewer.Subject, true)
	if err != nil {
		return nil, err
	}
	challenge := approval.ProofChallenge(a.ID, a.CallID, a.ArgumentsDigest, ans.Decision, ans.Decision.Scope())
	asserted, used, err := ans.RP.VerifyAssertion(PasskeyPerson(reviewer, keys), challenge, ans.Assertion)
	if err != nil {
		return nil, &proofError{err: errProofInvalid, why: err}
	}
	r := &proofReceipt{assertion: asserted, rp: ans.RP, decision: ans.Decision}
	for _, k := range keys {
		if string(k.CredentialID) == string(used.ID) {
			r.passkey = k
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE passkeys SET sign_count = $2, last_used_at = now() WHERE id = $1`,
		r.passkey.ID, int64(used.SignCount)); err != nil {
		return nil, err
	}
	err = tx.QueryRow(ctx, `INSERT INTO approval_receipts (approval_id, passkey_id, decision, scope, rp_id, origin, credential_id,
			authenticator_data, client_data_json, signature, user_handle)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
		a.ID, r.passkey.ID, string(ans.Decision), string(ans.Decision.Scope()), ans.RP.ID, ans.RP.Origin, asserted.CredentialID,
		asserted.AuthenticatorData, asserted.ClientDataJSON, asserted.Signature, nonNil(asserted.UserHandle)).Scan(&r.id)
	return r, err
}

// proofError is a refused assertion: the safe error the person sees, and
// why it did not verify, for the log and the audit line.
type proofError struct {
	err error
	why error
}

func (e *proofError) Error() string { return e.err.Error() }
func (e *proofError) Unwrap() error { return e.err }

// detail adds the receipt to the decision's audit line.
func (r *proofReceipt) detail(d map[string]any) {
	if r != nil {
		d["proof"], d["passkey"], d["passkey_id"] = string(approval.ProofPasskey), r.passkey.Name, r.passkey.ID
	}
}

// linkReceipt points receipt r, of item id, at the decision's audit line
// just recorded in the same transaction (under a quorum rule: the vote's).
func linkReceipt(ctx context.Context, tx pgx.Tx, r *proofReceipt, id string) error {
	if r == nil {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE approval_receipts SET audit_event_id = (SELECT max(e.id) FROM audit_events e
		WHERE e.approval_id = $1::text AND e.action = $2) WHERE id = $3`, id, decisionAction(r.decision), r.id)
	return err
}

// noteProofRefused returns err, having audited it when it is an approval
// refused for want of a valid passkey (in its own transaction: the decision's rolled back), so that an agent
// pressing Approve in the person's browser leaves a trace.
func (d *DB) noteProofRefused(ctx context.Context, id string, reviewer User, ans Answer, err error) error {
	code := ""
	if e := approval.AsError(err); e != nil {
		code = string(e.Code)
	}
	if code != approval.CodePasskeyRequired && code != approval.CodePasskeyInvalid {
		return err
	}
	detail := map[string]any{"decision": string(ans.Decision), "code": code, "assertion_sent": len(ans.Assertion) > 0}
	var pe *proofError
	if errors.As(err, &pe) {
		detail["why"] = pe.why.Error()
	}
	aerr := d.InTx(ctx, func(tx pgx.Tx) error {
		a, err := getApproval(ctx, tx, id, false)
		if err != nil {
			return err
		}
		return RecordAudit(ctx, tx, auditForApproval(a, reviewer.Actor(), approval.ActionProofRefused, detail))
	})
	if aerr != nil {
		// Unaudited, the refusal is not said to be one.
		return translate("audit a refused step-up approval", aerr)
	}
	return err
}

// ApprovalProof says how item id was approved, for the claim's answer:
// "passkey" when a passkey's receipt approved it, else "session".
func (d *DB) ApprovalProof(ctx context.Context, id string) (string, error) {
	var withPasskey bool
	err := d.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM approval_receipts WHERE approval_id = $1::uuid)`, id).Scan(&withPasskey)
	if err != nil {
		return "", translate("approval proof", err)
	}
	if withPasskey {
		return "passkey", nil
	}
	return "session", nil
}

// queueProofRequired marks, in the batch that creates them, the items of ps
// whose approval needs a passkey.
func queueProofRequired(b *pgx.Batch, ps []*pendingWrite) {
	var ids []string
	for _, p := range ps {
		if p.a.ProofRequired == approval.ProofPasskey {
			ids = append(ids, p.a.ID)
		}
	}
	if len(ids) > 0 {
		b.Queue(`UPDATE approvals SET proof_required = 'passkey' WHERE id = ANY($1::uuid[])`, ids)
	}
}
