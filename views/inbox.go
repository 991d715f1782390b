package views

import (
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
)

// ApprovalCard is one pending call as the inbox shows it.
type ApprovalCard struct {
	ID               string
	ToolDisplay      string
	ConnectorDisplay string
	ConversationID   string
	TurnID           string
	AgentReason      string
	Preview          approval.ArgumentPreview
	Decisions        []approval.Decision
	Destructive      bool
	SendsOut         bool
	Destination      string // where the data goes, when an argument names it
	CreatedAt        time.Time
	ExpiresAt        time.Time
	Now              time.Time
	CSRFToken        string
}

// DecidedRow is one of the recent decisions under the pending list.
type DecidedRow struct {
	ID               string
	ToolDisplay      string
	ConnectorDisplay string
	ConversationID   string
	TurnID           string
	Status           approval.Status
	Scope            string
	Reason           string
	DecidedAt        time.Time
	Now              time.Time
}

// Outcome is the row's result in words.
func (r DecidedRow) Outcome() (string, string) {
	switch r.Status {
	case approval.StatusApproved, approval.StatusConsumed:
		switch approval.Scope(r.Scope) {
		case approval.ScopeConversation:
			return "Allowed in this conversation", "ok"
		case approval.ScopeAlways:
			return "Always allowed", "ok"
		}
		return "Approved", "ok"
	case approval.StatusRejected:
		return "Rejected", "bad"
	case approval.StatusExpired:
		return "Expired", "warn"
	case approval.StatusCancelled:
		return "Cancelled", ""
	}
	return string(r.Status), ""
}

// InboxView is the inbox page.
type InboxView struct {
	Page       Page
	Pending    []ApprovalCard
	PendingKey string // names the pending set the page shows, for the event stream
	Recent     []DecidedRow
}

// destinationKeys are argument names that usually say where data goes.
var destinationKeys = []string{"to", "recipient", "recipients", "url", "destination", "channel", "host", "email", "cc", "bcc", "path"}

// DestinationOf picks the argument that names where a call sends data; a
// URL is named by its host.
func DestinationOf(p approval.ArgumentPreview) string {
	for _, want := range destinationKeys {
		for _, l := range p.Lines {
			if !strings.EqualFold(l.Key, want) || l.Value == "" {
				continue
			}
			if u, err := url.Parse(l.Value); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
				return u.Host
			}
			if r := []rune(l.Value); len(r) > 80 {
				return string(r[:80]) + "…"
			}
			return l.Value
		}
	}
	return ""
}

func buttonClass(d approval.Decision) string {
	switch d {
	case approval.Approve:
		return "btn btn-primary"
	case approval.Reject:
		return "btn btn-danger"
	}
	return "btn"
}

func shortID(s string) string {
	if len(s) > 24 {
		return s[:24] + "…"
	}
	return s
}

func decisionStrings(ds []approval.Decision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d)
	}
	return out
}
