package approval

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func TestProofChallenge(t *testing.T) {
	base := func() []byte { return ProofChallenge("item", "call", "sha256:ab", Approve, ScopeOnce) }
	if !bytes.Equal(base(), base()) || len(base()) != 32 {
		t.Fatal("not a stable SHA-256")
	}
	differ := []struct {
		name string
		got  []byte
	}{
		{"OtherItem", ProofChallenge("item2", "call", "sha256:ab", Approve, ScopeOnce)},
		{"OtherCall", ProofChallenge("item", "call2", "sha256:ab", Approve, ScopeOnce)},
		{"OtherDigest", ProofChallenge("item", "call", "sha256:ac", Approve, ScopeOnce)},
		{"OtherDecision", ProofChallenge("item", "call", "sha256:ab", Reject, ScopeOnce)},
		{"OtherScope", ProofChallenge("item", "call", "sha256:ab", Approve, ScopeConversation)},
		// Moving a separator must not give the same input.
		{"ShiftedBoundary", ProofChallenge("ite", "mcall", "sha256:ab", Approve, ScopeOnce)},
		{"EmptyField", ProofChallenge("itemcall", "", "sha256:ab", Approve, ScopeOnce)},
	}
	seen := map[string]string{hex.EncodeToString(base()): "base"}
	for _, d := range differ {
		t.Run(d.name, func(t *testing.T) {
			k := hex.EncodeToString(d.got)
			if prev, ok := seen[k]; ok {
				t.Fatalf("same challenge as %s", prev)
			}
			seen[k] = d.name
		})
	}
}

func TestRequiredProof(t *testing.T) {
	cases := []struct {
		name  string
		tool  Proof
		cond  ConditionResult
		asked Proof
		want  Proof
	}{
		{"None", ProofNone, NoCondition, "", ProofNone},
		{"Tool", ProofPasskey, NoCondition, "", ProofPasskey},
		{"ToolConditionTrue", ProofPasskey, ConditionTrue, "", ProofPasskey},
		{"ToolConditionFalse", ProofPasskey, ConditionFalse, "", ProofNone},
		{"ToolConditionErrorFailsClosed", ProofPasskey, ConditionError, "", ProofPasskey},
		{"CheckAsks", ProofNone, NoCondition, ProofPasskey, ProofPasskey},
		{"CheckStrongerThanCondition", ProofPasskey, ConditionFalse, ProofPasskey, ProofPasskey},
		{"CheckNeverWeaker", ProofPasskey, NoCondition, ProofNone, ProofPasskey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := RequiredProof(c.tool, c.cond, c.asked); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
	if NeedsProof(ProofPasskey, Reject) || !NeedsProof(ProofPasskey, Approve) || NeedsProof(ProofNone, Approve) {
		t.Fatal("NeedsProof")
	}
	in := CheckInput{ConversationGrant: true, AlwaysGrant: true, ScopedGrant: true, PreApproved: true}
	if got := in.RequiringProof(ProofPasskey); got.ConversationGrant || got.AlwaysGrant || got.ScopedGrant || got.PreApproved {
		t.Fatalf("grants kept: %+v", got)
	}
	if got := in.RequiringProof(ProofNone); got != in {
		t.Fatal("changed without proof")
	}
}
