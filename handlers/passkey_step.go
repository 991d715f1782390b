package handlers

import (
	"encoding/base64"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/views"
)

// relyingParty is the WebAuthn relying party of COUNTERSIGN_BASE_URL.
func (h *Handler) relyingParty() (*passkey.RP, error) {
	return passkey.New(h.Settings.BaseURL)
}

// passkeyStep fills the card's passkey step-up (issue 33): the challenge
// Approve is signed over when approving needs a passkey, and the passkey
// that approved the item.
func (h *Handler) passkeyStep(card *views.ApprovalCard, a db.Approval) {
	card.ApprovedWithPasskey = a.ProofPasskey
	if !approval.NeedsProof(a.ProofRequired, approval.Approve) || a.Status != approval.StatusPending {
		return
	}
	rp, err := h.relyingParty()
	if err != nil {
		return // the card then offers Approve without a passkey, which the server refuses
	}
	ch := approval.ProofChallenge(a.ID, a.CallID, a.ArgumentsDigest, approval.Approve, approval.Approve.Scope())
	card.PasskeyChallenge, card.PasskeyRP = base64.RawURLEncoding.EncodeToString(ch), rp.ID
}
