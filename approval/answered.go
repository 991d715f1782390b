package approval

// OutcomeWords says what became of an item, in a reviewer's words:
// "approved once", "allowed in this conversation", "always allowed",
// "rejected", "expired", "cancelled".
func OutcomeWords(s Status, scope Scope) string {
	switch s {
	case StatusApproved, StatusConsumed:
		switch scope {
		case ScopeConversation:
			return "allowed in this conversation"
		case ScopeAlways:
			return "always allowed"
		}
		return "approved once"
	case StatusRejected:
		return "rejected"
	case StatusExpired:
		return "expired"
	case StatusCancelled:
		return "cancelled"
	}
	return string(s)
}

// LateDecision is the conflict a decision gets when the item is no longer
// pending: it names what actually became of the item (and who answered, when
// by is not empty), so that a reviewer who lost a race is never told
// something else happened. s is the item's status as read after the
// decision failed; an item still pending past its deadline counts as
// expired.
func LateDecision(s Status, scope Scope, by string) *Error {
	if by != "" {
		by = " by " + by
	}
	const notRecorded = "Your answer was not recorded."
	switch s {
	case StatusExpired:
		return Errorf(KindConflict, CodeExpired, "This request expired before it was answered, so the call did not run. %s", notRecorded)
	case StatusCancelled:
		return Errorf(KindConflict, CodeAlreadyDecided, "This request was cancelled before it was answered, so the call did not run. %s", notRecorded)
	case StatusRejected:
		return Errorf(KindConflict, CodeAlreadyDecided, "This request was already answered: rejected%s. The call did not run. %s", by, notRecorded)
	case StatusConsumed:
		return Errorf(KindConflict, CodeAlreadyDecided, "This request was already answered: %s%s, and the call has run. %s",
			OutcomeWords(s, scope), by, notRecorded)
	}
	return Errorf(KindConflict, CodeAlreadyDecided, "This request was already answered: %s%s. %s", OutcomeWords(s, scope), by, notRecorded)
}
