package db

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/passkey"
	"github.com/jackc/pgx/v5"
)

// ReceiptReport is the result of re-checking every stored passkey receipt
// (invariant 16).
type ReceiptReport struct {
	Checked  int
	Failures []ReceiptFailure
}

// ReceiptFailure is a receipt that does not verify: the decision's audit
// event, its item and what is wrong.
type ReceiptFailure struct {
	EventID    int64
	Seq        int64
	ApprovalID string
	Problem    string
}

// OK says whether every receipt verified.
func (r ReceiptReport) OK() bool { return len(r.Failures) == 0 }

// String is the report in words, naming every failing event.
func (r ReceiptReport) String() string {
	if r.OK() {
		return fmt.Sprintf("%d passkey receipts verified", r.Checked)
	}
	parts := make([]string, len(r.Failures))
	for i, f := range r.Failures {
		parts[i] = fmt.Sprintf("event %d (seq %d, approval %s): %s", f.EventID, f.Seq, f.ApprovalID, f.Problem)
	}
	return fmt.Sprintf("%d of %d passkey receipts FAIL: %s", len(r.Failures), r.Checked, strings.Join(parts, "; "))
}

type receiptRow struct {
	ApprovalID        string `db:"approval_id"`
	CallID            string `db:"call_id"`
	Digest            string `db:"arguments_digest"`
	Status            string `db:"status"`
	Decision          string `db:"decision"`
	Scope             string `db:"scope"`
	RPID              string `db:"rp_id"`
	Origin            string `db:"origin"`
	CredentialID      []byte `db:"credential_id"`
	AuthenticatorData []byte `db:"authenticator_data"`
	ClientDataJSON    []byte `db:"client_data_json"`
	Signature         []byte `db:"signature"`
	UserHandle        []byte `db:"user_handle"`
	PasskeyCredential []byte `db:"passkey_credential"`
	PublicKey         []byte `db:"public_key"`
	EventID           int64  `db:"event_id"`
	Seq               int64  `db:"seq"`
}

// VerifyReceipts re-checks every stored passkey receipt: the assertion must
// be its passkey's signature, with user verification, over the challenge
// derived from the item as stored now (id, call id, arguments digest) and
// the answer recorded, and the item must have been approved. A receipt
// with no audit line fails too.
func (d *DB) VerifyReceipts(ctx context.Context) (ReceiptReport, error) {
	rows, err := d.Pool.Query(ctx, `SELECT r.approval_id::text AS approval_id, a.call_id, a.arguments_digest, a.status,
			r.decision, r.scope, r.rp_id, r.origin, r.credential_id, r.authenticator_data, r.client_data_json, r.signature,
			r.user_handle, p.credential_id AS passkey_credential, p.public_key, COALESCE(e.id, 0) AS event_id,
			COALESCE(c.seq, 0) AS seq
		FROM approval_receipts r JOIN approvals a ON a.id = r.approval_id JOIN passkeys p ON p.id = r.passkey_id
		LEFT JOIN audit_events e ON e.id = r.audit_event_id LEFT JOIN audit_chain c ON c.event_id = e.id
		ORDER BY r.audit_event_id NULLS FIRST, r.approval_id`)
	if err != nil {
		return ReceiptReport{}, translate("verify receipts", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[receiptRow])
	if err != nil {
		return ReceiptReport{}, translate("verify receipts", err)
	}
	var rep ReceiptReport
	for _, r := range list {
		rep.Checked++
		if problem := r.check(); problem != "" {
			rep.Failures = append(rep.Failures, ReceiptFailure{EventID: r.EventID, Seq: r.Seq, ApprovalID: r.ApprovalID, Problem: problem})
		}
	}
	return rep, nil
}

// check is what is wrong with the receipt, or "".
func (r receiptRow) check() string {
	switch {
	case r.EventID == 0:
		return "no audit line records this decision"
	case !bytes.Equal(r.CredentialID, r.PasskeyCredential):
		return "signed by another credential than the passkey recorded"
	case r.Status != string(approval.StatusApproved) && r.Status != string(approval.StatusConsumed):
		return "the item was not approved"
	}
	challenge := approval.ProofChallenge(r.ApprovalID, r.CallID, r.Digest, approval.Decision(r.Decision), approval.Scope(r.Scope))
	a := passkey.Assertion{CredentialID: r.CredentialID, AuthenticatorData: r.AuthenticatorData, ClientDataJSON: r.ClientDataJSON,
		Signature: r.Signature, UserHandle: r.UserHandle}
	if err := passkey.VerifyReceipt(r.RPID, r.Origin, challenge, a, r.PublicKey); err != nil {
		return "the passkey's signature does not verify for this call and answer"
	}
	return ""
}
