package approval

// A runtime that relays a decision to an agent which understands only some
// answers (Codex's app-server offers "accept for this session" for some
// requests and an execpolicy amendment for others) says which of
// Countersign's decisions it can carry out: the check's offered_decisions.
// The card then offers only those of the policy's decisions; Approve and
// Reject are always offered, so a runtime can narrow the standing
// decisions but never take away the plain answer.

// RuntimeOffers are the decisions a runtime may name in offered_decisions.
var RuntimeOffers = []Decision{Approve, ApproveConversation, AlwaysAllow, AlwaysMatching, Reject}

// CheckOffered reports whether every name in offered is a decision a
// runtime may offer, each at most once.
func CheckOffered(offered []string) error {
	seen := map[string]bool{}
	for _, o := range offered {
		known := false
		for _, d := range RuntimeOffers {
			known = known || string(d) == o
		}
		if !known || seen[o] {
			return Errorf(KindInvalid, CodeInvalidRequest,
				"offered_decisions may name approve, approve_conversation, always, always_matching and reject, each once.")
		}
		seen[o] = true
	}
	return nil
}

// NarrowOffered is decisions without the standing decisions the runtime
// did not offer. A nil offered (the runtime said nothing) changes nothing.
func NarrowOffered(decisions []Decision, offered []string) []Decision {
	if offered == nil {
		return decisions
	}
	out := make([]Decision, 0, len(decisions))
	for _, d := range decisions {
		if d == Approve || d == Reject || Offered(d, offered) {
			out = append(out, d)
		}
	}
	return out
}
