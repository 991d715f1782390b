package views

import (
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
)

// Offers reports whether the server offers d for this call.
func (c ApprovalCard) Offers(d approval.Decision) bool {
	for _, x := range c.Decisions {
		if x == d {
			return true
		}
	}
	return false
}

// Standing reports whether a standing decision is offered.
func (c ApprovalCard) Standing() bool {
	return c.Offers(approval.ApproveConversation) || c.Offers(approval.AlwaysAllow) ||
		(c.Offers(approval.AlwaysMatching) && c.Preview.Scope != nil)
}

// NeedsConfirm reports whether a standing decision asks a second time: for
// tools that can't be undone or send data out. A standing decision covers
// the tool's later calls, so it reads the tool's behaviour (ToolWide), not
// this call's quieter badges.
func (c ApprovalCard) NeedsConfirm() bool { return c.ToolWide.Destructive || c.ToolWide.SendsOut }

// ConfirmWhy says, for the second confirmation, why it is asked.
func (c ApprovalCard) ConfirmWhy() string {
	switch {
	case c.ToolWide.Destructive && c.ToolWide.SendsOut:
		return "This tool’s actions can’t be undone, and it sends data outside."
	case c.ToolWide.Destructive:
		return "This tool’s actions can’t be undone."
	}
	return "This tool sends data outside."
}

// NoStandingWhy says in one line why a call offers no standing decision.
func (c ApprovalCard) NoStandingWhy() string {
	switch {
	case c.Deciders.Words != "" && !c.Deciders.OwnerDecides:
		// Standing consent is one person's own; this call's rule names others.
		return "“Allow in this conversation” and “Always allow” are not offered: this call is decided by " + c.Deciders.Words + ", and standing approval is one person’s own."
	case c.ToolWide.Destructive:
		return "“Allow in this conversation” and “Always allow” are not offered: this tool’s actions can’t be undone, so its policy asks about every call."
	case c.ToolWide.SendsOut:
		return "“Allow in this conversation” and “Always allow” are not offered: this tool sends data outside, so its policy asks about every call."
	case c.UnknownBehaviour:
		return "“Allow in this conversation” and “Always allow” are not offered: nothing is known of what this tool does, until an administrator classifies it."
	}
	return "“Allow in this conversation” and “Always allow” are not offered: an admin set this tool to ask about every call."
}

// DefaultDuration is the length preselected: the admin's cap when there is
// one, else until revoked.
func (c ApprovalCard) DefaultDuration() time.Duration { return c.MaxGrant }

// DestinationList is where the call sends data, one entry per recipient.
func (c ApprovalCard) DestinationList() []string {
	if len(c.Recipients) > 0 {
		return c.Recipients
	}
	if c.Destination != "" {
		return []string{c.Destination}
	}
	return nil
}

// ExpiringSoon reports whether the call expires within a minute.
func (c ApprovalCard) ExpiringSoon() bool { return c.ExpiresAt.Sub(c.Now) < time.Minute }

// ConversationLabel is the conversation as the reviewer reads it.
func (c ApprovalCard) ConversationLabel() string {
	if c.ConversationTitle != "" {
		return c.ConversationTitle
	}
	return shortID(c.ConversationID)
}

func scopeWords(d approval.Decision) string {
	if d == approval.AlwaysAllow {
		return "This tool, any arguments, in every conversation, without asking —"
	}
	return "This tool, any arguments, in this conversation only, without asking —"
}

// lastsWords is how long a standing grant lasts, to follow a scope.
func lastsWords(d time.Duration) string {
	if d == 0 {
		return "until you revoke it"
	}
	return "for " + approval.DurationWords(d) + " or until you revoke it"
}

func durationValue(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

func durationLabel(d time.Duration) string {
	if d == 0 {
		return "Until revoked"
	}
	return approval.DurationWords(d)
}

func joinWords(ws []string) string { return strings.Join(ws, " ") }
