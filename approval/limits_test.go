package approval

import (
	"strings"
	"testing"
)

func TestCheckFields(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name string
		f    Field
		want string // "" when accepted, else the message's start
	}{
		{"IDAtLimit", Field{Name: "turn_id", Value: x(200), Rule: RuleID, Required: true}, ""},
		{"IDCountsCharacters", Field{Name: "turn_id", Value: strings.Repeat("é", 200), Rule: RuleID}, ""},
		{"ErrIDTooLong", Field{Name: "turn_id", Value: x(201), Rule: RuleID}, "turn_id is too long: at most 200 characters."},
		{"ErrRequired", Field{Name: "user", Value: "", Rule: RuleID, Required: true}, "user is required."},
		{"ErrRequiredBlank", Field{Name: "user", Value: "  ", Rule: RuleID, Required: true}, "user is required."},
		{"OptionalEmpty", Field{Name: "reason", Value: "", Rule: RuleReason}, ""},
		{"ErrIDControl", Field{Name: "call_id", Value: "a\nb", Rule: RuleID}, "call_id holds a control character (U+000A)"},
		{"ErrIDC1Control", Field{Name: "call_id", Value: "a\u0085b", Rule: RuleID}, "call_id holds a control character (U+0085)"},
		{"ErrIDNUL", Field{Name: "call_id", Value: "a\x00", Rule: RuleID}, "call_id holds a control character (U+0000)"},
		{"IDBidiShownNotRefused", Field{Name: "conversation_id", Value: "conv\u202e1", Rule: RuleID}, ""},
		{"ErrInvalidUTF8", Field{Name: "user", Value: "\xff", Rule: RuleID}, "user is not valid UTF-8."},
		{"Name", Field{Name: "tool", Value: "send_email.v2:x-y", Rule: RuleName}, ""},
		{"NameAtLimit", Field{Name: "tool", Value: x(128), Rule: RuleName}, ""},
		{"ErrNameTooLong", Field{Name: "tool", Value: x(129), Rule: RuleName}, "tool must be 1–128 letters"},
		{"ErrNameFormula", Field{Name: "tool", Value: "=HYPERLINK(\"x\")", Rule: RuleName}, "tool must be"},
		{"ErrNameLeadingDash", Field{Name: "connector", Value: "-x", Rule: RuleName}, "connector must be"},
		{"ToolNameLeadingUnderscore", Field{Name: "tool", Value: "_private", Rule: RuleToolName}, ""},
		{"ToolNameMCPExamples", Field{Name: "tool", Value: "admin.tools.list", Rule: RuleToolName}, ""},
		{"ToolNameLeadingDashAndDot", Field{Name: "tool", Value: "-x.", Rule: RuleToolName}, ""},
		{"ToolNameAtLimit", Field{Name: "tool", Value: "_" + x(127), Rule: RuleToolName}, ""},
		{"ErrToolNameTooLong", Field{Name: "tool", Value: x(129), Rule: RuleToolName}, "tool must be 1–128 letters"},
		{"ErrToolNameSlash", Field{Name: "tools[1].name", Value: "ns/tool", Rule: RuleToolName}, "tools[1].name must be 1–128 letters"},
		{"ErrToolNameSpace", Field{Name: "tool", Value: "a b", Rule: RuleToolName}, "tool must be"},
		{"ErrToolNameFormula", Field{Name: "tool", Value: "=HYPERLINK(\"x\")", Rule: RuleToolName}, "tool must be"},
		{"ErrToolNameDot", Field{Name: "tool", Value: ".", Rule: RuleToolName}, "tool must be"},
		{"ErrToolNameDotDot", Field{Name: "tool", Value: "..", Rule: RuleToolName}, "tool must be"},
		{"ToolNameThreeDots", Field{Name: "tool", Value: "...", Rule: RuleToolName}, ""},
		{"ErrToolNameNonASCII", Field{Name: "tool", Value: "caf\u00e9", Rule: RuleToolName}, "tool must be"},
		{"DisplayNameAtLimit", Field{Name: "display_name", Value: x(200), Rule: RuleDisplayName}, ""},
		{"ErrDisplayNameTooLong", Field{Name: "display_name", Value: x(201), Rule: RuleDisplayName}, "display_name is too long: at most 200"},
		{"DescriptionLines", Field{Name: "description", Value: "a\tb\r\nc", Rule: RuleDescription}, ""},
		{"ErrDescriptionTooLong", Field{Name: "description", Value: x(2001), Rule: RuleDescription}, "description is too long: at most 2000"},
		{"ErrDescriptionNUL", Field{Name: "description", Value: "a\x00", Rule: RuleDescription}, "description holds a control character (U+0000)"},
		{"ReasonAtLimit", Field{Name: "reason", Value: x(2000), Rule: RuleReason}, ""},
		{"ReasonCR", Field{Name: "reason", Value: "Routine cleanup\revent: x", Rule: RuleReason}, ""},
		{"ErrReasonTooLong", Field{Name: "reason", Value: x(2001), Rule: RuleReason}, "reason is too long: at most 2000"},
		{"ErrInstructionsTooLong", Field{Name: "definition.instructions", Value: x(20001), Rule: RuleInstructions}, "definition.instructions is too long"},
		{"RunID", Field{Name: "playbook_run_id", Value: "8d1f0c2e-5b0c-4e1a-9f2a-0123456789ab", Rule: RuleRunID}, ""},
		{"RunIDUpperCase", Field{Name: "playbook_run_id", Value: "8D1F0C2E-5B0C-4E1A-9F2A-0123456789AB", Rule: RuleRunID}, ""},
		{"ErrRunIDFormula", Field{Name: "playbook_run_id", Value: `=HYPERLINK("http://evil.example","x")`, Rule: RuleRunID}, "playbook_run_id must be a run id"},
		{"ErrRunIDHuge", Field{Name: "playbook_run_id", Value: x(1 << 20), Rule: RuleRunID}, "playbook_run_id must be a run id"},
		{"ErrRunIDBlank", Field{Name: "playbook_run_id", Value: " ", Rule: RuleRunID}, "playbook_run_id must be a run id"},
		{"ErrRunIDTrailing", Field{Name: "playbook_run_id", Value: "8d1f0c2e-5b0c-4e1a-9f2a-0123456789ab\n", Rule: RuleRunID}, "playbook_run_id must be a run id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckFields(Field{Name: "ok", Value: "fine", Rule: RuleID}, c.f)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e := AsError(err)
			if e == nil || e.Kind != KindInvalid || e.Code != CodeInvalidRequest || !strings.HasPrefix(e.Message, c.want) {
				t.Fatalf("got %v, want a 400 starting %q", err, c.want)
			}
		})
	}
}

func TestCheckFieldsFirstProblemWins(t *testing.T) {
	err := CheckFields(Field{Name: "a", Value: "", Rule: RuleID, Required: true}, Field{Name: "b", Value: "\x01", Rule: RuleID})
	if e := AsError(err); e == nil || e.Message != "a is required." {
		t.Fatal(err)
	}
}

func TestDefinitionCheckLimits(t *testing.T) {
	ok := func() Definition {
		return Definition{Name: "Weekly digest", Instructions: "Line one\nline two", Steps: []Step{{ID: "s1", Title: "Send",
			WorkType: WorkType{ID: "compose", Version: "3"}, Tools: []Pair{{Connector: "mail", Tool: "send_email"}}}}}
	}
	if err := ok().CheckLimits(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		edit func(*Definition)
		want string
	}{
		{func(d *Definition) { d.Name = strings.Repeat("n", 201) }, "definition.name is too long"},
		{func(d *Definition) { d.Instructions = "a\x00" }, "definition.instructions holds a control character"},
		{func(d *Definition) { d.Steps[0].ID = strings.Repeat("i", 201) }, "definition.steps[0].id is too long"},
		{func(d *Definition) { d.Steps[0].Title = "a\x1bb" }, "definition.steps[0].title holds a control character"},
		{func(d *Definition) { d.Steps[0].WorkType.Version = strings.Repeat("v", 201) }, "definition.steps[0].work_type.version is too long"},
		{func(d *Definition) { d.Steps[0].Tools[0].Tool = "=1+1" }, "definition.steps[0].tools[0].tool must be"},
		{func(d *Definition) { d.Steps[0].Tools[0].Connector = "a b" }, "definition.steps[0].tools[0].connector must be"},
	}
	for _, c := range cases {
		d := ok()
		c.edit(&d)
		if e := AsError(d.CheckLimits()); e == nil || !strings.HasPrefix(e.Message, c.want) {
			t.Errorf("got %v, want %q", e, c.want)
		}
	}
}
