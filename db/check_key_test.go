package db_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

// The tool a runtime's check reads with its key (one statement, scanned
// column by column) is the tool as every other reader reads it, hints,
// grant cap and all.
func TestCheckWithKeyReadsTheWholeTool(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	yes, no := true, false
	if err := f.store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: []db.ToolSync{{Name: "send_email", DisplayName: "Send email", Description: "Sends one email.",
			Annotations: approval.Annotations{ReadOnlyHint: &no, DestructiveHint: &yes, OpenWorldHint: &yes}}}}); err != nil {
		t.Fatal(err)
	}
	tool, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email",
		approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true, MaxGrant: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	raw, _, err := f.store.CreateAPIKey(ctx, "second", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := f.store.CheckWithAPIKey(ctx, raw, db.CheckRequest{CallID: "c", User: f.user.Subject, ConversationID: "conv",
		TurnID: "t", Connector: "mail", Tool: "send_email", Arguments: `{}`}, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.store.ToolByID(ctx, tool.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Tool, want) {
		t.Fatalf("the check read\n%+v\nother readers read\n%+v", res.Tool, want)
	}
	if want.MaxGrantSeconds == nil || want.DestructiveHint == nil || !*want.DestructiveHint || want.Description == "" {
		t.Fatalf("the fixture did not set what the test compares: %+v", want)
	}
}

// The turn's facts that a runtime's check reads in its one statement lead
// to what they led to when read on their own: the third rejection of the
// same arguments in a turn is refused without asking, the same call after
// its approval gets its approved item, and an "Always allow" grant allows.
func TestCheckWithKeyReadsTheTurnsFacts(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	raw := f.runtimeKey(t)
	check := func(call, turn, args string) db.CheckResult {
		t.Helper()
		res, err := f.keyCheck(ctx, raw, db.CheckRequest{CallID: call, TurnID: turn, Tool: "send_email", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i := range 2 {
		res := check(fmt.Sprint("r", i), "rejecting", `{"to":"x@example.com"}`)
		if res.Approval == nil {
			t.Fatalf("check %d: %+v", i, res.Outcome)
		}
		if _, err := f.store.Decide(ctx, res.Approval.ID, f.user, approval.Reject, "no"); err != nil {
			t.Fatal(err)
		}
	}
	if res := check("r2", "rejecting", `{"to":"x@example.com"}`); res.Outcome.Verdict != approval.Deny ||
		res.Outcome.Code != approval.CodeDeniedRepeated {
		t.Fatalf("after two rejections in the turn: %+v", res.Outcome)
	}
	first := check("same", "approving", `{"n":1}`)
	if _, err := f.store.Decide(ctx, first.Approval.ID, f.user, approval.Approve, ""); err != nil {
		t.Fatal(err)
	}
	if res := check("same", "approving", `{"n":1}`); res.Approval == nil || res.Approval.ID != first.Approval.ID ||
		res.Approval.Status != approval.StatusApproved {
		t.Fatalf("the same call after its approval: %+v %+v", res.Outcome, res.Approval)
	}
	granting := check("g", "granting", `{"n":2}`)
	if _, err := f.store.Decide(ctx, granting.Approval.ID, f.user, approval.AlwaysAllow, ""); err != nil {
		t.Fatal(err)
	}
	if res := check("g2", "another turn", `{"n":3}`); res.Outcome != (approval.Outcome{Verdict: approval.Allow, Via: approval.ViaAlwaysAllow}) {
		t.Fatalf("under an always-allow grant: %+v", res.Outcome)
	}
}

// The first statement reads the turn's facts only for a tool that asked a
// person when last read. Whichever statement ran, a tool whose policy
// changed since is decided on all its facts: rejections in the turn still
// block it after the policy went to allow and back.
func TestCheckStatementFollowsThePolicy(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	raw := f.runtimeKey(t)
	n := 0
	check := func(tool string) db.CheckResult {
		t.Helper()
		n++
		res, err := f.keyCheck(ctx, raw, db.CheckRequest{CallID: fmt.Sprint("c", n), TurnID: "turn", Tool: tool,
			Arguments: `{"to":"x@example.com"}`})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := func(want bool) {
		t.Helper()
		if got := f.store.ReadsFactsFirst("mail", "send_email"); got != want {
			t.Fatalf("reads the facts first: %v, want %v", got, want)
		}
	}
	apart := f.store.FactsReadApart()
	readApart := func(want int64) {
		t.Helper()
		got := f.store.FactsReadApart() - apart
		if got != want {
			t.Fatalf("checks that read the facts apart: %d, want %d", got, want)
		}
		apart += got
	}
	first(false)
	for i := range 2 {
		res := check("send_email")
		if res.Approval == nil {
			t.Fatalf("asking tool: %+v", res.Outcome)
		}
		readApart(int64(1 - i)) // the first check learns that the tool asks
		first(true)
		if _, err := f.store.Decide(ctx, res.Approval.ID, f.user, approval.Reject, "no"); err != nil {
			t.Fatal(err)
		}
	}
	f.setMode(t, approval.ModeAllow)
	if res := check("send_email"); res.Outcome.Verdict != approval.Allow {
		t.Fatalf("allowed tool read with the facts: %+v", res.Outcome)
	}
	first(false)
	if res := check("send_email"); res.Outcome.Verdict != approval.Allow {
		t.Fatalf("allowed tool: %+v", res.Outcome)
	}
	readApart(0)
	f.setMode(t, approval.ModeRequireApproval)
	for i := range 2 {
		if res := check("send_email"); res.Outcome.Verdict != approval.Deny || res.Outcome.Code != approval.CodeDeniedRepeated {
			t.Fatalf("check %d after the policy asks again, two rejections in the turn: %+v", i, res.Outcome)
		}
		readApart(int64(1 - i))
		first(true)
	}
	f.setMode(t, approval.ModeBlock)
	if res := check("send_email"); res.Outcome.Verdict != approval.Deny {
		t.Fatalf("blocked tool: %+v", res.Outcome)
	}
	first(false)
	if _, err := f.keyCheck(ctx, raw, db.CheckRequest{CallID: "u", TurnID: "turn", Tool: "no_such_tool", Arguments: `{}`}); err == nil {
		t.Fatal("an unknown tool was checked")
	}
	if f.store.ReadsFactsFirst("mail", "no_such_tool") {
		t.Fatal("an unknown tool is remembered")
	}
}
