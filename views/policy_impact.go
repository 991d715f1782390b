package views

import (
	"strconv"
	"strings"
)

// Total is every standing approval that would lapse.
func (i ImpactView) Total() int { return i.AlwaysGrants + i.ConversationGrants + i.PreApprovals }

// Calls is every call in flight that saving would stop.
func (i ImpactView) Calls() int { return i.WaitingCalls + i.ApprovedCalls }

// CallsSentence says which calls in flight saving stops, e.g. "3 waiting
// calls will be cancelled, 1 approved call will not run".
func (i ImpactView) CallsSentence() string {
	var parts []string
	if i.WaitingCalls > 0 {
		parts = append(parts, strconv.Itoa(i.WaitingCalls)+" waiting "+plural0(i.WaitingCalls, "call")+" will be cancelled")
	}
	if i.ApprovedCalls > 0 {
		parts = append(parts, strconv.Itoa(i.ApprovedCalls)+" approved "+plural0(i.ApprovedCalls, "call")+" will not run")
	}
	return strings.Join(parts, ", ")
}

// ConfirmLabel is the text of the button that saves despite the impact.
func (i ImpactView) ConfirmLabel() string {
	approvals := strconv.Itoa(i.Total()) + " " + plural0(i.Total(), "approval")
	calls := strconv.Itoa(i.Calls()) + " " + plural0(i.Calls(), "call")
	switch {
	case i.Calls() == 0:
		return "Save and end " + approvals
	case i.Total() == 0:
		return "Save and stop " + calls
	}
	return "Save, end " + approvals + " and stop " + calls
}
