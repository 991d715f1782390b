package approval

import (
	"fmt"
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	ask := Policy{Mode: ModeRequireApproval, StandingApproval: true, Version: 3}
	noStanding := Policy{Mode: ModeRequireApproval, StandingApproval: false, Version: 3}
	matchable := Policy{Mode: ModeRequireApproval, Matchable: true, Version: 3}
	cond := Policy{Mode: ModeRequireApproval, StandingApproval: true, Condition: "args.amount > 100", Version: 1}
	cases := []struct {
		name string
		in   CheckInput
		want Outcome
	}{
		{"Blocked", CheckInput{Policy: Policy{Mode: ModeBlock}}, Outcome{Verdict: Deny, Code: CodeBlockedByPolicy}},
		{"BlockedEvenWithGrant", CheckInput{Policy: Policy{Mode: ModeBlock}, AlwaysGrant: true}, Outcome{Verdict: Deny, Code: CodeBlockedByPolicy}},
		{"BlockedInRun", CheckInput{Policy: Policy{Mode: ModeBlock}, InPlaybookRun: true, PreApproved: true}, Outcome{Verdict: Deny, Code: CodeBlockedByPolicy}},
		{"UnknownModeFailsClosed", CheckInput{Policy: Policy{Mode: "maybe"}}, Outcome{Verdict: Deny, Code: CodeBlockedByPolicy}},
		{"AllowedByPolicy", CheckInput{Policy: Policy{Mode: ModeAllow}}, Outcome{Verdict: Allow, Via: ViaPolicy}},
		{"RunPreApproved", CheckInput{Policy: ask, InPlaybookRun: true, PreApproved: true}, Outcome{Verdict: Allow, Via: ViaPreapproval}},
		{"RunNotPreApprovedNeverPrompts", CheckInput{Policy: ask, InPlaybookRun: true, AlwaysGrant: true, ConversationGrant: true}, Outcome{Verdict: Deny, Code: CodeApprovalUnavailable}},
		{"RefusedRunRunsNothing", CheckInput{Policy: Policy{Mode: ModeAllow}, InPlaybookRun: true, RunRefused: true}, Outcome{Verdict: Deny, Code: CodeApprovalUnavailable}},
		{"BlockedInRefusedRun", CheckInput{Policy: Policy{Mode: ModeBlock}, InPlaybookRun: true, RunRefused: true}, Outcome{Verdict: Deny, Code: CodeBlockedByPolicy}},
		{"RunAllowedTool", CheckInput{Policy: Policy{Mode: ModeAllow}, InPlaybookRun: true}, Outcome{Verdict: Allow, Via: ViaPolicy}},
		{"ConditionFalseAllows", CheckInput{Policy: cond, Condition: ConditionFalse}, Outcome{Verdict: Allow, Via: ViaPolicy}},
		{"ConditionTrueAsks", CheckInput{Policy: cond, Condition: ConditionTrue}, Outcome{Verdict: Pending}},
		{"ConditionErrorAsks", CheckInput{Policy: cond, Condition: ConditionError}, Outcome{Verdict: Pending}},
		{"ConditionFalseWithoutConditionAsks", CheckInput{Policy: ask, Condition: ConditionFalse}, Outcome{Verdict: Pending}},
		{"RepeatedRejections", CheckInput{Policy: ask, RejectionsThisTurn: 2, DeniedThreshold: 2}, Outcome{Verdict: Deny, Code: CodeDeniedRepeated}},
		{"RepeatedBeatsGrant", CheckInput{Policy: ask, RejectionsThisTurn: 2, DeniedThreshold: 2, AlwaysGrant: true}, Outcome{Verdict: Deny, Code: CodeDeniedRepeated}},
		{"BelowThreshold", CheckInput{Policy: ask, RejectionsThisTurn: 1, DeniedThreshold: 2}, Outcome{Verdict: Pending}},
		{"ConversationGrant", CheckInput{Policy: ask, ConversationGrant: true, AlwaysGrant: true}, Outcome{Verdict: Allow, Via: ViaConversationGrant}},
		{"AlwaysGrant", CheckInput{Policy: ask, AlwaysGrant: true}, Outcome{Verdict: Allow, Via: ViaAlwaysAllow}},
		{"GrantIgnoredWithoutStanding", CheckInput{Policy: noStanding, AlwaysGrant: true, ConversationGrant: true}, Outcome{Verdict: Pending}},
		{"Pending", CheckInput{Policy: ask}, Outcome{Verdict: Pending}},
		{"ScopedGrant", CheckInput{Policy: ask, ScopedGrant: true}, Outcome{Verdict: Allow, Via: ViaAlwaysAllow, Scoped: true}},
		{"ScopedGrantMatchableOnly", CheckInput{Policy: matchable, ScopedGrant: true}, Outcome{Verdict: Allow, Via: ViaAlwaysAllow, Scoped: true}},
		{"ScopedGrantIgnoredWhenNotOffered", CheckInput{Policy: noStanding, ScopedGrant: true}, Outcome{Verdict: Pending}},
		{"ScopedGrantNeverInRun", CheckInput{Policy: matchable, InPlaybookRun: true, ScopedGrant: true}, Outcome{Verdict: Deny, Code: CodeApprovalUnavailable}},
		{"ScopedGrantAfterRepeatedRejections", CheckInput{Policy: ask, RejectionsThisTurn: 2, DeniedThreshold: 2, ScopedGrant: true}, Outcome{Verdict: Deny, Code: CodeDeniedRepeated}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Evaluate(c.in); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestAvailableDecisions(t *testing.T) {
	for _, c := range []struct {
		standing, matchable bool
		want                string
	}{
		{true, false, "[approve approve_conversation always always_matching reject]"},
		{true, true, "[approve approve_conversation always always_matching reject]"},
		{false, true, "[approve always_matching reject]"},
		{false, false, "[approve reject]"},
	} {
		if got := fmt.Sprint(AvailableDecisions(c.standing, c.matchable)); got != c.want {
			t.Errorf("standing %v matchable %v: %s, want %s", c.standing, c.matchable, got, c.want)
		}
	}
	for d, l := range map[Decision]string{Approve: "Approve", ApproveConversation: "Allow in this conversation", AlwaysAllow: "Always allow",
		AlwaysMatching: "Always allow calls like this", Reject: "Reject"} {
		if d.Label() != l {
			t.Errorf("%s label %q", d, d.Label())
		}
	}
}

func TestDefaultPolicy(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name     string
		a        Annotations
		standing *bool
		want     Policy
	}{
		{"ReadOnlyAllowed", Annotations{ReadOnlyHint: &yes}, nil, Policy{Mode: ModeAllow, StandingApproval: true, Version: 1}},
		{"AbsentHintsAsk", Annotations{IdempotentHint: &no}, nil, Policy{Mode: ModeRequireApproval, StandingApproval: true, Version: 1}},
		{"UnknownAsksWithoutStanding", Annotations{}, nil, Policy{Mode: ModeRequireApproval, StandingApproval: false, Version: 1}},
		{"NotReadOnlyAsks", Annotations{ReadOnlyHint: &no, DestructiveHint: &no}, nil, Policy{Mode: ModeRequireApproval, StandingApproval: true, Version: 1}},
		{"DataMovingNoStanding", Annotations{OpenWorldHint: &yes}, &no, Policy{Mode: ModeRequireApproval, StandingApproval: false, Version: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := DefaultPolicy(c.a, c.standing); got != c.want {
				t.Fatalf("%+v", got)
			}
		})
	}
	var a Annotations
	if a.ReadOnly() || !a.Destructive() || a.Idempotent() || !a.OpenWorld() || !a.Unknown() {
		t.Fatal("MCP defaults: not read-only, destructive, not idempotent, open world")
	}
}

func TestMessages(t *testing.T) {
	codes := []ReasonCode{CodeApprovalDenied, CodeApprovalTimeout, CodeApprovalCancelled, CodeDeniedRepeated,
		CodeApprovalUnavailable, CodeBlockedByPolicy, CodePolicyUnavailable, CodePlaybookApproval, CodeApprovalPending}
	seen := map[string]bool{}
	for _, c := range codes {
		m := Message(c, MessageInput{Tool: "Send email"})
		if m == "" || seen[m] {
			t.Errorf("%s: empty or duplicate message", c)
		}
		seen[m] = true
		if c != CodePlaybookApproval && !strings.Contains(m, "did not run") && !strings.Contains(m, "not run") {
			t.Errorf("%s: message does not say the call did not run: %s", c, m)
		}
	}
	m := Message(CodeApprovalDenied, MessageInput{Tool: "Send email", UserReason: "wrong recipient"})
	if !strings.Contains(m, `The user's words: "wrong recipient"`) || !strings.Contains(m, "Do not call it again with the same arguments") {
		t.Fatal(m)
	}
	if !strings.Contains(Message(CodeApprovalUnavailable, MessageInput{Tool: "x", Playbook: "Weekly report"}), `"Weekly report"`) {
		t.Fatal("playbook not named")
	}
	link := "https://cs.example/approvals/0b7f5a52-8d39-4a3c-9d0e-5c1f2a3b4c5d"
	m = Message(CodeApprovalPending, MessageInput{Tool: "Send email", URL: link})
	if !strings.Contains(m, "approval at "+link) || !strings.Contains(m, "make the same call again") || !strings.Contains(m, "not run yet") {
		t.Fatal(m)
	}
	if m := Message(CodeApprovalPending, MessageInput{Tool: "Send email"}); strings.Contains(m, " at ") || strings.Contains(m, "link") {
		t.Fatal("a link promised without one:", m)
	}
}

// The check answers "allowed by policy" from the policy and the condition
// alone, without reading rejections or grants: that is sound only while the
// decision order returns it before looking at them.
func TestAllowedByPolicyNeedsNoLaterFacts(t *testing.T) {
	for _, mode := range []Mode{ModeAllow, ModeRequireApproval, ModeBlock} {
		for _, cond := range []string{"", "x"} {
			for _, r := range []ConditionResult{NoCondition, ConditionTrue, ConditionFalse, ConditionError} {
				base := CheckInput{Policy: Policy{Mode: mode, StandingApproval: true, Condition: cond}, Condition: r, DeniedThreshold: 2}
				if Evaluate(base) != (Outcome{Verdict: Allow, Via: ViaPolicy}) {
					continue
				}
				full := base
				full.RejectionsThisTurn, full.ConversationGrant, full.AlwaysGrant = 99, true, true
				if got := Evaluate(full); got != (Outcome{Verdict: Allow, Via: ViaPolicy}) {
					t.Errorf("%s %q %v: with rejections and grants %+v", mode, cond, r, got)
				}
			}
		}
	}
}
