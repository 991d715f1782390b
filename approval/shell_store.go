package approval

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Limits of a shell view kept with an item's preview: it is a preview too
// (arguments are not stored in full), so the commands' text it keeps is
// bounded like one value shown whole. The flags are computed on the whole
// parse first, so a bound never hides a warning; the card says when the
// commands are shown in part, and the raw command is shown as well.
const (
	ShellStoredChars     = 4096 // characters of words and redirection targets, all commands together
	ShellStoredCommands  = 100
	ShellStoredWords     = 64 // per command
	ShellStoredWordChars = 400
	ShellStoredFlags     = 40
	ShellStoredHosts     = 30
)

// ShellPreview parses the shell command held in the argument named arg
// (the tool's catalog entry names it), for the card. It is nil when the
// tool names no shell argument or the call does not send it; a value that
// is not a string is shown as not parsed.
func ShellPreview(a Arguments, arg, workdir string) *ShellView {
	if arg == "" || !a.Parsed {
		return nil
	}
	for _, m := range a.Members {
		if m.Key != arg {
			continue
		}
		if m.Value.Kind() != '"' {
			return &ShellView{Problem: "the command is not a string"}
		}
		v := ParseShell(valueText(m.Value), workdir).Bounded()
		return &v
	}
	return nil
}

// Bounded is the view as stored with a preview: at most
// ShellStoredCommands commands of ShellStoredWords words of
// ShellStoredWordChars characters each, and so many flags and hosts;
// Shortened says when anything was left out.
func (v ShellView) Bounded() ShellView {
	out := v
	out.Problem = shortText(v.Problem, &out.Shortened)
	if len(v.Commands) > ShellStoredCommands {
		out.Commands, out.Shortened = v.Commands[:ShellStoredCommands], true
	}
	cmds := make([]ShellCommand, 0, len(out.Commands))
	budget := ShellStoredChars
	for _, c := range out.Commands {
		if budget <= 0 {
			out.Shortened = true
			break
		}
		c = boundCommand(c, &out.Shortened)
		budget -= commandChars(c)
		cmds = append(cmds, c)
	}
	out.Commands = cmds
	if len(cmds) < len(v.Commands) {
		out.Total = max(v.Total, len(v.Commands))
		last := boundCommand(v.Commands[len(v.Commands)-1], &out.Shortened)
		out.Last = &last
	}
	if len(v.Flags) > ShellStoredFlags {
		out.Flags, out.Shortened = v.Flags[:ShellStoredFlags], true
	}
	flags := make([]ShellFlag, len(out.Flags))
	for i, f := range out.Flags {
		f.Subject, f.Detail = shortText(f.Subject, &out.Shortened), shortText(f.Detail, &out.Shortened)
		flags[i] = f
	}
	out.Flags = flags
	if len(v.Hosts) > ShellStoredHosts {
		out.Hosts, out.Shortened = v.Hosts[:ShellStoredHosts], true
	}
	return out
}

// boundCommand keeps at most ShellStoredWords words and redirections of
// c, each cut to ShellStoredWordChars characters, and notes a cut.
func boundCommand(c ShellCommand, cut *bool) ShellCommand {
	if len(c.Words) > ShellStoredWords {
		c.Words, *cut = c.Words[:ShellStoredWords], true
	}
	c.Words = boundWords(c.Words, cut)
	if len(c.Redirects) > ShellStoredWords {
		c.Redirects, *cut = c.Redirects[:ShellStoredWords], true
	}
	rs := make([]ShellRedirect, len(c.Redirects))
	for j, r := range c.Redirects {
		r.Target = boundWords([]ShellWord{r.Target}, cut)[0]
		rs[j] = r
	}
	c.Redirects = rs
	return c
}

// commandChars counts the characters of c's words and redirection
// targets.
func commandChars(c ShellCommand) int {
	n := 0
	for _, w := range c.Words {
		n += utf8.RuneCountInString(w.Text)
	}
	for _, r := range c.Redirects {
		n += utf8.RuneCountInString(r.Target.Text)
	}
	return n
}

func boundWords(ws []ShellWord, cut *bool) []ShellWord {
	out := make([]ShellWord, len(ws))
	for i, w := range ws {
		w.Text, w.Value = shortText(w.Text, cut), shortText(w.Value, cut)
		out[i] = w
	}
	return out
}

// shortText keeps the first ShellStoredWordChars characters of s, made
// safe to store (printable), and notes a cut.
func shortText(s string, cut *bool) string {
	out, _, short := shorten(s, ShellStoredWordChars)
	if short {
		*cut = true
	}
	return out
}

// ShellShortNote is what the card says when the stored parse is partial.
func ShellShortNote(v ShellView) string {
	if v.Count() > len(v.Commands) {
		return fmt.Sprintf("Only part of the parse is kept here (the first %d of %d commands, long words cut); the flags cover the whole command, which is shown in full below.", len(v.Commands), v.Count())
	}
	return fmt.Sprintf("Only part of the parse is kept here (%d commands, long words cut); the flags cover the whole command, which is shown in full below.", len(v.Commands))
}

// shellWordJSON is a ShellWord as stored: a literal word's value is left
// out when it equals its text (most words), which halves a stored view.
type shellWordJSON struct {
	Text    string  `json:"text"`
	Literal bool    `json:"literal,omitempty"`
	Value   *string `json:"value,omitempty"`
	Assign  bool    `json:"assign,omitempty"`
}

// MarshalJSON stores the word, its value only when it differs from its
// text.
func (w ShellWord) MarshalJSON() ([]byte, error) {
	out := shellWordJSON{Text: w.Text, Literal: w.Literal, Assign: w.Assign}
	if w.Literal && w.Value != w.Text {
		out.Value = &w.Value
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a stored word back.
func (w *ShellWord) UnmarshalJSON(b []byte) error {
	var in shellWordJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*w = ShellWord{Text: in.Text, Literal: in.Literal, Assign: in.Assign}
	if in.Value != nil {
		w.Value = *in.Value
	} else if in.Literal {
		w.Value = in.Text
	}
	return nil
}
