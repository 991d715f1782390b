package views

import (
	"strings"

	"github.com/countersign/countersign/approval"
)

// OwnFlags are the call's own red flags other than its shell command's
// (which ShellFlags shows with their details) and hidden characters
// (which the card warns about in a sentence of its own).
func (c ApprovalCard) OwnFlags() []approval.CallFlag {
	var out []approval.CallFlag
	for _, f := range c.Shown().Flags() {
		switch f.Kind {
		case approval.CallFlagLookAlike, approval.CallFlagUnreadable, approval.CallFlagUnparsed:
			out = append(out, f)
		}
	}
	return out
}

// HasFlags reports whether the call has any red flag of its own, shown
// first on its card.
func (c ApprovalCard) HasFlags() bool {
	return c.HasHidden() || len(c.OwnFlags()) > 0 || (c.Preview.Shell != nil && len(c.Preview.Shell.Flags) > 0)
}

// CommandEnds are the first and last simple commands of the call's shell
// command (nil when it has none parsed); last is nil when there is one.
func (c ApprovalCard) CommandEnds() (first, last *approval.ShellCommand) {
	sh := c.Preview.Shell
	if sh == nil || !sh.Parsed || len(sh.Commands) == 0 {
		return nil, nil
	}
	first = &sh.Commands[0]
	switch {
	case sh.Last != nil:
		last = sh.Last
	case len(sh.Commands) > 1:
		last = &sh.Commands[len(sh.Commands)-1]
	}
	return first, last
}

// DiffSummary is the diff's files in one line: each path with its lines
// added and removed ("" when there is no parsed diff).
func (c ApprovalCard) DiffSummary() string {
	d := c.Diff
	if d == nil || !d.Parsed || len(d.Files) == 0 {
		return ""
	}
	parts := make([]string, 0, len(d.Files))
	for _, f := range d.Files {
		add, del := 0, 0
		for _, h := range f.Hunks {
			for _, l := range h.Lines {
				switch l.Kind {
				case approval.DiffAdd:
					add++
				case approval.DiffRemove:
					del++
				}
			}
		}
		what := "+" + itoa(add) + " −" + itoa(del)
		switch {
		case f.IsNew():
			what = "new, " + what
		case f.IsDeleted():
			what = "deleted"
		case f.IsMoved():
			what = "moved, " + what
		}
		parts = append(parts, f.Path()+" ("+what+")")
	}
	return strings.Join(parts, "; ")
}

// commandText is a simple command as written, on one line.
func commandText(c approval.ShellCommand) string {
	ws := make([]string, 0, len(c.Words)+len(c.Redirects))
	for _, w := range c.Words {
		ws = append(ws, w.Text)
	}
	for _, r := range c.Redirects {
		ws = append(ws, r.Op+r.Target.Text)
	}
	s := strings.Join(ws, " ")
	if c.Negated {
		s = "! " + s
	}
	return s
}

// EditPairs are the edit's replacements, old before new, shown above the
// arguments as sent when the agent's side sent no diff of its own (a diff
// already reads old before new).
func (c ApprovalCard) EditPairs() []approval.EditPair {
	if c.Diff != nil {
		return nil
	}
	return approval.EditPairs(c.Preview)
}

// argsID names a card's arguments, for links to them.
func argsID(id string) string { return "args-" + id }

// endChars is how much of a call's end a batch confirmation shows.
const endChars = 160

// FlagWords are the call's own red flags in words, one a line, for the
// batch confirmation (the card shows them with their details).
func (c ApprovalCard) FlagWords() string {
	var out []string
	for _, f := range c.Shown().Flags() {
		w := f.Words
		if f.Subject != "" {
			w += ": " + f.Subject
		}
		out = append(out, Marked(w))
	}
	return strings.Join(out, "\n")
}

// End is the end of what the call runs, on one line: its last simple
// command, or the end of its last argument's value.
func (c ApprovalCard) End() string {
	if first, last := c.CommandEnds(); last != nil {
		return Marked(tail(commandText(*last), endChars))
	} else if first != nil {
		return Marked(tail(commandText(*first), endChars))
	}
	p := c.Preview
	var s string
	switch {
	case !p.Parsed && p.RawTail != "":
		s = p.RawTail
	case !p.Parsed:
		s = p.Raw
	case len(p.Lines) > 0:
		l := p.Lines[len(p.Lines)-1]
		s = l.Key + ": " + l.Value
		if l.Folded() {
			s = l.Key + ": …" + l.Tail
		}
	}
	return Marked(tail(strings.Join(strings.Fields(s), " "), endChars))
}

// BatchRefusal says why the call will not be approved in a batch (see
// approval.BatchRefusal), or "".
func (c ApprovalCard) BatchRefusal() string {
	s := c.Shown()
	if c.PasskeyChallenge != "" {
		s.Proof = approval.ProofPasskey
	}
	return approval.BatchRefusal(s)
}

// tail keeps the last n characters of s, marked "…" when cut.
func tail(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

// codeKeys are argument keys whose value is code or a file's text: shown
// in a monospace font even when it runs over several lines (an edit's
// old_string and new_string).
var codeKeys = map[string]bool{"old_string": true, "new_string": true, "content": true, "code": true, "patch": true,
	"command": true, "script": true, "diff": true, "source": true, "old_str": true, "new_str": true, "file_text": true, "input": true}

func isCodeKey(k string) bool { return codeKeys[strings.ToLower(k)] }
