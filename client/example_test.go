package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/countersign/countersign/client"
)

// A runtime gates every tool call right before running it. (The server
// here is a stand-in that allows everything; point New at Countersign.)
func ExampleClient_Gate() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"call_id":"call-1","decision":"allow","via":"policy"}`)
	}))
	defer srv.Close()

	cs := client.New(srv.URL, "cs_your_runtime_key")
	out, err := cs.Gate(context.Background(), client.Call{
		CallID: "call-1", User: "user-subject", ConversationID: "conv-1", TurnID: "turn-1",
		Connector: "mail", Tool: "search_messages", Arguments: `{"query":"invoices"}`,
	})
	if err != nil {
		fmt.Println("log:", err) // the outcome below is already "not allowed"
	}
	if !out.Allowed {
		fmt.Println("tell the model:", out.Code, out.Message)
		return
	}
	fmt.Println("run the tool; allowed via", out.Via)
	// Output: run the tool; allowed via policy
}
