package client_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// A runtime syncs its tool catalog, then gates every tool call right before
// running it. Against the server these examples start (see
// example_server_test.go), the person demo-member approves the email to
// finance@acme.example and rejects any other, saying "Use the billing alias".
func Example() {
	ctx := context.Background()
	cs := client.New(os.Getenv("COUNTERSIGN_URL"), os.Getenv("COUNTERSIGN_API_KEY"))

	// The connector's full tool list. Hints are *bool: absent hints take the
	// MCP defaults (not read-only, destructive, not idempotent, open world).
	yes, no := true, false
	tools := []client.ConnectorTool{
		{Name: "search_messages", DisplayName: "Search messages",
			Annotations: approval.Annotations{ReadOnlyHint: &yes}},
		{Name: "send_email", DisplayName: "Send email",
			Annotations: approval.Annotations{DestructiveHint: &no, OpenWorldHint: &yes}},
	}
	if err := cs.SyncConnector(ctx, "mail", client.Connector{DisplayName: "Mail", Kind: "connector", Tools: tools}); err != nil {
		log.Fatalf("sync the catalog: %v", err)
	}

	// gate asks right before the tool runs; the tool runs only when allowed.
	gate := func(callID, tool, argsJSON string) {
		out, err := cs.Gate(ctx, client.Call{
			CallID: callID, User: "demo-member", ConversationID: "conv-1", TurnID: "turn-1",
			Connector: "mail", Tool: tool, Arguments: argsJSON, Reason: "The user asked to send the invoice.",
		})
		if err != nil {
			log.Printf("countersign: %v", err) // out is already "not allowed" (policy_unavailable)
		}
		if !out.Allowed {
			// Give out.Code and out.Message to the model as the tool's result.
			fmt.Printf("%s: not run, %s (approval %t)\n", callID, out.Code, out.ApprovalID != "")
			return
		}
		// out.Via: policy, conversation_grant, always_allow, preapproval or person;
		// out.Scope (once, conversation, always) and out.ApprovalID when a person approved.
		fmt.Printf("%s: run, via %s, scope %q\n", callID, out.Via, out.Scope)
	}

	gate("call-1", "search_messages", `{"query":"invoice from Acme"}`)
	gate("call-2", "send_email", `{"to":"finance@acme.example","subject":"Invoice"}`)
	gate("call-3", "send_email", `{"to":"everyone@acme.example","subject":"Invoice"}`)
	// Output:
	// call-1: run, via policy, scope ""
	// call-2: run, via person, scope "once"
	// call-3: not run, approval_denied (approval true)
}

// The message a rejected call returns is written for the model and quotes
// the person's words.
func ExampleOutcome() {
	ctx := context.Background()
	cs := client.New(os.Getenv("COUNTERSIGN_URL"), os.Getenv("COUNTERSIGN_API_KEY"))
	out, _ := cs.Gate(ctx, client.Call{CallID: "call-4", User: "demo-member", ConversationID: "conv-2", TurnID: "turn-1",
		Connector: "mail", Tool: "send_email", Arguments: `{"to":"all@acme.example"}`})
	fmt.Println(out.Allowed, out.Code)
	fmt.Println(out.Message)
	// Output:
	// false approval_denied
	// The user rejected this call to Send email, so it did not run. The user's words: "Use the billing alias". Do not call it again with the same arguments. Tell the user it did not run, take their reason into account, and continue with what you can do without it.
}
