package approval

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on the text the runtime API accepts, counted in characters. They
// keep what runtimes send (and what the append-only audit log keeps for
// good) to a size a person can read; arguments have their own limits (see
// MaxArgumentsSize).
const (
	MaxIDChars           = 200   // call, conversation and turn ids; user subjects; playbook owners; step ids
	MaxNameChars         = 128   // connector and tool names, playbook ids (see NamePattern)
	MaxDisplayNameChars  = 200   // display names, playbook names, step titles
	MaxDescriptionChars  = 2000  // a tool's description
	MaxReasonChars       = 2000  // the agent's reason for a call
	MaxInstructionsChars = 20000 // a playbook's or a step's instructions
)

// Rule says what one kind of request field may hold.
type Rule int

// Rules, one per kind of field.
const (
	RuleID           Rule = iota // 1–200 characters, no control characters
	RuleName                     // NamePattern
	RuleToolName                 // ToolNamePattern, and not "." or ".."
	RuleDisplayName              // up to 200 characters, no control characters
	RuleDescription              // up to 2000 characters; tab and line breaks allowed
	RuleReason                   // up to 2000 characters; tab and line breaks allowed
	RuleInstructions             // up to 20000 characters; tab and line breaks allowed
	RuleRunID                    // a run id as the server issued it: a UUID
)

// NamePattern is what connector and tool names and playbook ids look like:
// 1–128 letters, digits, '_', '.', ':' or '-', starting with a letter or a
// digit. A name can therefore never start like a spreadsheet formula.
var NamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

// ToolNamePattern is what tool names look like: 1–128 letters, digits,
// '_', '.', ':' or '-' in any order — every name the MCP specification's
// naming guidance allows (A-Z, a-z, 0-9, '_', '-', '.'; a leading
// underscore included), and ':' as connector and tool names always took.
// A name that is only "." or ".." is refused: it would change a URL path
// it is part of. Spreadsheet exports defuse a leading '-' (see the audit
// export).
var ToolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// Field is one text field of a request, named as the API names it.
type Field struct {
	Name     string
	Value    string
	Rule     Rule
	Required bool
}

// CheckFields returns an invalid_request error for the first field that
// breaks its rule, with a message that names the field, or nil.
func CheckFields(fields ...Field) error {
	for _, f := range fields {
		if problem := f.problem(); problem != "" {
			return Errorf(KindInvalid, CodeInvalidRequest, "%s %s", f.Name, problem)
		}
	}
	return nil
}

// problem is what is wrong with f in words that follow its name, or "".
func (f Field) problem() string {
	v := f.Value
	switch {
	case f.Required && strings.TrimSpace(v) == "":
		return "is required."
	case v == "":
		return ""
	}
	if !utf8.ValidString(v) {
		return "is not valid UTF-8."
	}
	switch f.Rule {
	case RuleName:
		if !NamePattern.MatchString(v) {
			return "must be 1–128 letters, digits, '_', '.', ':' or '-', starting with a letter or a digit."
		}
		return ""
	case RuleToolName:
		if !ToolNamePattern.MatchString(v) || v == "." || v == ".." {
			return "must be 1–128 letters, digits, '_', '.', ':' or '-' (and not only dots)."
		}
		return ""
	case RuleRunID:
		if !uuidPattern.MatchString(v) {
			return "must be a run id as returned when the run started (a UUID)."
		}
		return ""
	}
	limit, lines := f.Rule.limit()
	if n := utf8.RuneCountInString(v); n > limit {
		return "is too long: at most " + strconv.Itoa(limit) + " characters."
	}
	for _, r := range v {
		if isControl(r) && !(lines && (r == '\t' || r == '\n' || r == '\r')) {
			return fmt.Sprintf("holds a control character (U+%04X), which is not accepted.", r)
		}
	}
	return ""
}

// limit is a rule's length in characters and whether tabs and line breaks
// are part of its text.
func (r Rule) limit() (int, bool) {
	switch r {
	case RuleDisplayName:
		return MaxDisplayNameChars, false
	case RuleDescription:
		return MaxDescriptionChars, true
	case RuleReason:
		return MaxReasonChars, true
	case RuleInstructions:
		return MaxInstructionsChars, true
	}
	return MaxIDChars, false
}

// NormalizeRunID returns a run id in the form the server issues it
// (lower-case), so that an upper-case copy still names the same run.
func NormalizeRunID(id string) string { return strings.ToLower(id) }

// isControl reports C0 and C1 control characters and DEL. Other invisible
// characters (bidi controls, zero-width) are accepted and shown as visible
// markers wherever a person reads them.
func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }

// CheckLimits checks the length and the characters of every text of a
// playbook definition; Validate checks its shape.
func (d Definition) CheckLimits() error {
	fields := []Field{
		{Name: "definition.name", Value: d.Name, Rule: RuleDisplayName},
		{Name: "definition.instructions", Value: d.Instructions, Rule: RuleInstructions},
	}
	for i, s := range d.Steps {
		at := "definition.steps[" + strconv.Itoa(i) + "]."
		fields = append(fields,
			Field{Name: at + "id", Value: s.ID, Rule: RuleID},
			Field{Name: at + "title", Value: s.Title, Rule: RuleDisplayName},
			Field{Name: at + "instructions", Value: s.Instructions, Rule: RuleInstructions},
			Field{Name: at + "work_type.id", Value: s.WorkType.ID, Rule: RuleID},
			Field{Name: at + "work_type.version", Value: s.WorkType.Version, Rule: RuleID})
		for j, p := range s.Tools {
			tat := at + "tools[" + strconv.Itoa(j) + "]."
			fields = append(fields, Field{Name: tat + "connector", Value: p.Connector, Rule: RuleName},
				Field{Name: tat + "tool", Value: p.Tool, Rule: RuleToolName})
		}
	}
	return CheckFields(fields...)
}
