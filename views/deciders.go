package views

import "fmt"

// DecidersView says who may decide a card's call and, for a quorum, how
// far it got; it is empty for a call only its owner decides.
type DecidersView struct {
	// Words names who decides ("two of finance (the agent's owner does
	// not count)", "any member of platform", "the agent's owner"), by
	// approval.DeciderRule.CallWords.
	Words string
	// OwnerDecides: the agent's owner (a person) alone decides; OwnCall:
	// and that is the viewer, so the card does not repeat who decides.
	OwnerDecides, OwnCall bool
	// Needed and In count a quorum's approvals (Needed 1: no quorum), and
	// Approvers names who approved so far, in order.
	Needed, In int
	Approvers  []string
	// YouApproved: the viewer's approval is in; their answer counts once.
	YouApproved bool
	// TeamCall names the team the call came to the viewer through, when it
	// is not their own agent's ("" for their own).
	TeamCall string
	// ItemID is the call's id: the progress is updated live by it.
	ItemID string
}

// Quorum reports whether the call needs more than one approval.
func (d DecidersView) Quorum() bool { return d.Needed > 1 }

// Progress is "1 of 2 approved".
func (d DecidersView) Progress() string { return fmt.Sprintf("%d of %d approved", d.In, d.Needed) }

// StillNeeded is "1 more approval" or "2 more approvals".
func (d DecidersView) StillNeeded() string {
	n := max(d.Needed-d.In, 0)
	if n == 1 {
		return "1 more approval"
	}
	return fmt.Sprintf("%d more approvals", n)
}
