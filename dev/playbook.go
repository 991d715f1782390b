package dev

import "github.com/countersign/countersign/approval"

// DemoPlaybookID is the demo playbook's id.
const DemoPlaybookID = "weekly-invoice-digest"

// DemoPlaybook is a scheduled playbook owned by the demo member: it reads
// mail (allowed), sends a digest email and books a follow-up (both require
// approval), so the pre-approval dialog and run refusals can be seen.
func DemoPlaybook() approval.Definition {
	return approval.Definition{
		Name:         "Weekly invoice digest",
		Instructions: "Every Monday, collect last week's invoices from mail and send finance a short digest.",
		Settings:     []byte(`{"lookback_days":7,"recipients":["finance@acme.example"]}`),
		Steps: []approval.Step{
			{ID: "collect", Title: "Collect invoices", Instructions: "Search mail for invoices received in the last week.",
				WorkType: approval.WorkType{ID: "search", Version: "1"}, Tools: []approval.Pair{{Connector: "mail", Tool: "search_messages"}},
				Position: approval.Position{X: 80, Y: 60}},
			{ID: "digest", Title: "Send the digest", Instructions: "Email finance a table of invoices, amounts and due dates.",
				WorkType: approval.WorkType{ID: "compose-and-send", Version: "3"}, Tools: []approval.Pair{{Connector: "mail", Tool: "send_email"}},
				Position: approval.Position{X: 320, Y: 60}},
			{ID: "followup", Title: "Book a follow-up", Instructions: "If anything is overdue, book 15 minutes with finance.",
				WorkType: approval.WorkType{ID: "schedule", Version: "1"}, Tools: []approval.Pair{{Connector: "calendar", Tool: "create_event"}, {Connector: "mail", Tool: "send_email"}},
				Position: approval.Position{X: 560, Y: 60}},
		},
	}
}
