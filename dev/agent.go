package dev

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

func ptr(b bool) *bool { return &b }

// DemoCatalog is the demo agent's tool catalog: read-only, destructive and
// data-moving tools across a few connectors and the builtin system tools.
var DemoCatalog = map[string]client.Connector{
	"mail": {DisplayName: "Mail", Kind: "connector", Tools: []client.ConnectorTool{
		{Name: "search_messages", DisplayName: "Search messages", Annotations: approval.Annotations{ReadOnlyHint: ptr(true)}},
		{Name: "send_email", DisplayName: "Send email", Annotations: approval.Annotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
		{Name: "delete_message", DisplayName: "Delete message", Annotations: approval.Annotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}},
	}},
	"files": {DisplayName: "Files", Kind: "connector", Tools: []client.ConnectorTool{
		{Name: "read_file", DisplayName: "Read file", Annotations: approval.Annotations{ReadOnlyHint: ptr(true)}},
		{Name: "upload_file", DisplayName: "Upload file", Annotations: approval.Annotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}, StandingApproval: ptr(false)},
		{Name: "delete_file", DisplayName: "Delete file", Annotations: approval.Annotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}},
	}},
	"web": {DisplayName: "Web", Kind: "connector", Tools: []client.ConnectorTool{
		{Name: "open_page", DisplayName: "Open web page", Annotations: approval.Annotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}, StandingApproval: ptr(false)},
	}},
	"calendar": {DisplayName: "Calendar", Kind: "connector", Tools: []client.ConnectorTool{
		{Name: "list_events", DisplayName: "List events", Annotations: approval.Annotations{ReadOnlyHint: ptr(true)}},
		{Name: "create_event", DisplayName: "Create event", Annotations: approval.Annotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}},
	}},
	"system": {DisplayName: "System", Kind: "builtin", Tools: []client.ConnectorTool{
		{Name: "run_command", DisplayName: "Run shell command", Annotations: approval.Annotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}, ShellArgument: "command"},
		{Name: "get_time", DisplayName: "Get time", Annotations: approval.Annotations{ReadOnlyHint: ptr(true)}},
	}},
}

type demoCall struct {
	connector, tool, args, reason string
}

// demoScript is what the demo agent keeps trying, round after round.
var demoScript = []demoCall{
	{"mail", "search_messages", `{"query":"invoice from Acme","limit":5}`, "Find the invoice the user asked about."},
	{"mail", "send_email", `{"to":"finance@acme.example","subject":"Invoice 4471 — payment scheduled","body":"Hello,\n\nThe invoice 4471 is scheduled for payment on Friday. Let me know if anything is missing.\n\nBest regards,\nMaya"}`, "Confirm the payment date to Acme's finance team, as the user asked."},
	{"calendar", "create_event", `{"title":"Quarterly review","start":"2026-12-04T10:00:00Z","duration_minutes":45,"attendees":["maya@example.com","sam@example.com"]}`, "Book the review the user and Sam agreed on."},
	{"files", "delete_file", `{"path":"/shared/reports/2023/draft-old.xlsx"}`, "Clean up the outdated draft the user mentioned."},
	{"web", "open_page", `{"url":"https://status.example.com/incidents/2291?utm_source=agent&utm_medium=chat&session=8f1b2c9d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0"}`, "Check whether the outage the user reported is known."},
	{"files", "upload_file", `{"path":"/home/maya/notes/q4-plan.md","destination":"https://share.example.net/upload","public":false}`, "Share the plan with the contractor, as asked."},
	{"system", "run_command", `{"command":"rm -rf ./build && make release","cwd":"/srv/app"}`, "Rebuild the release the user wants to ship."},
	{"mail", "delete_message", `{"message_id":"<CAF=8xQ@mail.example>","folder":"Inbox"}`, "Remove the duplicate newsletter."},
	{"system", "get_time", `{}`, ""},
}

// AgentOptions configure RunAgent.
type AgentOptions struct {
	Client   *client.Client
	User     string // OIDC subject of the demo conversation's owner
	Interval time.Duration
	Out      io.Writer
	// MaxOutstanding bounds calls waiting for a person at once.
	MaxOutstanding int
}

// RunAgent registers the demo catalog and keeps playing turns through
// client.Gate until ctx ends, printing what the model would receive.
func RunAgent(ctx context.Context, o AgentOptions) error {
	if o.MaxOutstanding <= 0 {
		o.MaxOutstanding = 4
	}
	if err := registerDemo(ctx, o); err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, o.MaxOutstanding)
	var turn atomic.Int64
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for i := 0; ; i++ {
		// Every seventh turn the playbook's schedule fires: it never waits
		// for a person, so it does not take a slot.
		if i%7 == 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				playRun(ctx, o)
			}()
			if !nextTick(ctx, tick) {
				return nil
			}
			continue
		}
		select {
		case sem <- struct{}{}:
		default: // enough calls are waiting for a person; try again later
			if !nextTick(ctx, tick) {
				return nil
			}
			continue
		}
		call := turnCall(demoScript[i%len(demoScript)], turn.Add(1), o.User)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			playCall(ctx, o, call)
		}()
		if !nextTick(ctx, tick) {
			return nil
		}
	}
}

// registerDemo registers the demo catalog and playbook.
func registerDemo(ctx context.Context, o AgentOptions) error {
	for name, conn := range DemoCatalog {
		if err := o.Client.SyncConnector(ctx, name, conn); err != nil {
			return fmt.Errorf("register the demo catalog: %w", err)
		}
	}
	if err := o.Client.RegisterPlaybook(ctx, DemoPlaybookID, o.User, DemoPlaybook()); err != nil {
		return fmt.Errorf("register the demo playbook: %w", err)
	}
	fmt.Fprintf(o.Out, "demo agent: catalog and playbook %q registered; playing turns for %s every %s\n", DemoPlaybook().Name, o.User, o.Interval)
	return nil
}

// nextTick waits for the next tick; it is false once ctx ends.
func nextTick(ctx context.Context, tick *time.Ticker) bool {
	select {
	case <-tick.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// turnCall is turn n's call of step for user, in one of three
// conversations.
func turnCall(step demoCall, n int64, user string) client.Call {
	return client.Call{
		CallID: fmt.Sprintf("call-%d-%d", time.Now().Unix(), n), User: user,
		ConversationID: fmt.Sprintf("conv-%d", 1+n%3), TurnID: fmt.Sprintf("turn-%d", n),
		Connector: step.connector, Tool: step.tool, Arguments: step.args, Reason: step.reason,
		Runtime: &client.Runtime{Client: "Countersign demo agent"},
	}
}

// playCall gates call and prints what the model would receive.
func playCall(ctx context.Context, o AgentOptions, call client.Call) {
	out, err := o.Client.Gate(ctx, call)
	if ctx.Err() != nil {
		return
	}
	line := fmt.Sprintf("[%s %s] %s.%s → ", call.ConversationID, call.TurnID, call.Connector, call.Tool)
	if out.Allowed {
		line += "runs (" + out.Via
		if out.Scope != "" {
			line += ", " + out.Scope
		}
		line += ")"
	} else {
		line += "does not run: " + out.Code + " — " + out.Message
	}
	if err != nil {
		line += " [" + err.Error() + "]"
	}
	fmt.Fprintln(o.Out, line)
}

// playRun starts a run of the demo playbook, as its schedule would, and
// plays its steps: the pre-approved tools run, a tool outside the playbook
// is refused without asking anyone.
func playRun(ctx context.Context, o AgentOptions) {
	run, err := o.Client.StartRun(ctx, DemoPlaybookID)
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(o.Out, "[playbook] run of %q refused: %v\n", DemoPlaybook().Name, err)
		}
		return
	}
	fmt.Fprintf(o.Out, "[playbook] run %s started with %d pre-approved tools\n", run.ID[:8], len(run.Preapproved))
	calls := []demoCall{
		{"mail", "search_messages", `{"query":"invoice newer_than:7d"}`, ""},
		{"mail", "send_email", `{"to":"finance@acme.example","subject":"Weekly invoice digest","body":"3 invoices, 1 overdue."}`, ""},
		{"files", "upload_file", `{"path":"/reports/digest.csv","destination":"https://share.example.net/upload"}`, "Attach the digest as a file."},
	}
	for i, step := range calls {
		call := client.Call{CallID: fmt.Sprintf("%s-%d", run.ID[:8], i), User: o.User, ConversationID: "playbook-" + run.ID[:8],
			TurnID: "run", Connector: step.connector, Tool: step.tool, Arguments: step.args, Reason: step.reason, PlaybookRunID: run.ID}
		out, err := o.Client.Gate(ctx, call)
		if ctx.Err() != nil {
			return
		}
		line := fmt.Sprintf("[playbook %s] %s.%s → ", run.ID[:8], call.Connector, call.Tool)
		if out.Allowed {
			line += "runs (" + out.Via + ")"
		} else {
			line += "does not run: " + out.Code + " — " + out.Message
		}
		if err != nil {
			line += " [" + err.Error() + "]"
		}
		fmt.Fprintln(o.Out, line)
	}
}
