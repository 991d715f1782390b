package approval

import (
	"crypto/sha256"
	"encoding/binary"
)

// Proof is what an approval must carry beyond the reviewer's signed-in
// session (invariant 16).
type Proof string

// Proofs. ProofNone: the session is enough; ProofPasskey: a WebAuthn
// assertion with user verification over the item's ProofChallenge.
const (
	ProofNone    Proof = "none"
	ProofPasskey Proof = "passkey"
)

// ParseProof reads a proof as stored or sent; "" is none, and anything
// else unknown is reported as not ok.
func ParseProof(s string) (Proof, bool) {
	switch Proof(s) {
	case "", ProofNone:
		return ProofNone, true
	case ProofPasskey:
		return ProofPasskey, true
	}
	return "", false
}

// Stronger is the stronger of two proofs: a check may ask for more than the
// tool's policy, never for less.
func (p Proof) Stronger(q Proof) Proof {
	if p == ProofPasskey || q == ProofPasskey {
		return ProofPasskey
	}
	return ProofNone
}

// RequiredProof is the proof an item's approval needs: the tool's (when its
// proof condition is absent or not false — an error fails closed to
// "required"), made stronger by the check's.
func RequiredProof(tool Proof, cond ConditionResult, asked Proof) Proof {
	p := ProofNone
	if tool == ProofPasskey && cond != ConditionFalse {
		p = ProofPasskey
	}
	return p.Stronger(asked)
}

// NeedsProof says whether deciding dec on an item that requires proof needs
// the passkey: every approval does, a rejection never.
func NeedsProof(required Proof, dec Decision) bool {
	return required == ProofPasskey && dec != Reject
}

// WithoutStanding is decisions less the standing ones: an item that needs a
// passkey offers no standing approval, which would approve later calls
// without one.
func WithoutStanding(decisions []Decision) []Decision {
	out := make([]Decision, 0, len(decisions))
	for _, d := range decisions {
		if d == Approve || d == Reject {
			out = append(out, d)
		}
	}
	return out
}

// ProofChallenge is the WebAuthn challenge for answering item itemID (call
// callID, arguments digest) with decision and scope: the SHA-256 of the
// five fields, each preceded by its length, so that no two different sets
// of fields give the same input. The passkey's signature over it covers
// exactly the call and the answer shown.
func ProofChallenge(itemID, callID, digest string, decision Decision, scope Scope) []byte {
	h := sha256.New()
	h.Write([]byte("countersign/proof/v1"))
	for _, f := range []string{itemID, callID, digest, string(decision), string(scope)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return h.Sum(nil)
}

// Audit actions of passkeys and step-up approvals.
const (
	ActionPasskeyAdded   = "passkey added"
	ActionPasskeyRemoved = "passkey removed"
	ActionPasskeysReset  = "passkeys reset"
	// ActionProofRefused is an approval attempt of a call that needs a
	// passkey, without a valid assertion: nothing was decided.
	ActionProofRefused = "approval refused without passkey"
)

// ProofActions are the passkey actions, listed in the audit screen's filter.
var ProofActions = []string{ActionProofRefused, ActionPasskeyAdded, ActionPasskeyRemoved, ActionPasskeysReset}

// Reason codes of a step-up approval refused.
const (
	// CodePasskeyRequired: the call needs a passkey and no assertion came.
	CodePasskeyRequired = "passkey_required"
	// CodePasskeyInvalid: an assertion came and does not verify for this
	// call, this answer and this person.
	CodePasskeyInvalid = "passkey_invalid"
)

// RequiringProof is the check's input when approving the call needs proof
// p: a standing grant or a playbook's pre-approval carries no passkey, so
// neither allows such a call (the check asks a person, or in a run denies).
func (in CheckInput) RequiringProof(p Proof) CheckInput {
	if p == ProofPasskey {
		in.ConversationGrant, in.AlwaysGrant, in.ScopedGrant, in.PreApproved = false, false, false, false
	}
	return in
}
