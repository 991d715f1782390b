package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// A hidden character in a tool's name or in the agent's reason only warns
// on the card, but a batch does not approve the call: it is seen whole only
// on its own card (issue 42). The server refuses it whatever the page's
// script did, the answer says why, and the plain call beside it is
// approved. The inbox row carries the same refusal for the script.
func TestBatchHiddenNameOrReason(t *testing.T) {
	l := newLoop(t)
	err := l.Client.SyncConnector(context.Background(), "notes", client.Connector{DisplayName: "Notes", Kind: "connector",
		Tools: []client.ConnectorTool{{Name: "add", DisplayName: "Add\u200b note", Annotations: approval.Annotations{}},
			{Name: "list", DisplayName: "List notes", Annotations: approval.Annotations{}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"add", "list"} {
		if _, err := l.DB.SetToolPolicy(context.Background(), approval.SystemActor, "notes", tool,
			approval.Policy{Mode: approval.ModeRequireApproval}); err != nil {
			t.Fatal(err)
		}
	}
	hiddenName := l.pending(t, l.call("notes", "add", `{"text":"buy milk"}`))
	reasoned := l.call("notes", "list", `{"folder":"home"}`)
	reasoned["reason"] = "Tidy up\u202e first"
	hiddenReason := l.pending(t, reasoned)
	plain := l.pending(t, l.call("notes", "list", `{"folder":"work"}`))

	_, inbox := l.Member.Get("/")
	rows := map[string]string{}
	for _, r := range testIDs(parseHTML(t, inbox), "pending-row") {
		rows[attr(r, "data-row-for")] = attr(r, "data-batch-refusal")
	}
	if !strings.Contains(rows[hiddenName], "hidden") || !strings.Contains(rows[hiddenReason], "hidden") || rows[plain] != "" {
		t.Fatalf("rows' batch refusals: %q", rows)
	}

	resp, body := l.Member.PostForm("/approvals/batch", url.Values{"decision": {"approve"}, "id": {hiddenName, hiddenReason, plain}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("batch: %d", resp.StatusCode)
	}
	text := visibleText(body)
	if strings.Count(text, "Not decided — decide it on its own card") != 2 || !strings.Contains(text, "hidden or direction-changing characters") {
		t.Fatalf("the batch answer does not say why: %s", text)
	}
	for id, want := range map[string]string{hiddenName: "pending", hiddenReason: "pending", plain: "approved"} {
		if got := l.status(t, id); got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}
	// Rejecting in a batch stays possible.
	if resp, _ := l.Member.PostForm("/approvals/batch", url.Values{"decision": {"reject"}, "id": {hiddenName}}); resp.StatusCode != http.StatusOK {
		t.Fatalf("batch reject: %d", resp.StatusCode)
	}
	if got := l.status(t, hiddenName); got != "rejected" {
		t.Fatalf("after a batch reject: %s", got)
	}
}
