package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"unicode"
	"unicode/utf8"
)

// GrantScope is what a scoped grant ("Always allow calls like this")
// covers, as data: exactly one of Shell and Args is set. It is checked by
// Covers, a pure function, against every later call's arguments.
type GrantScope struct {
	Shell *ShellScope `json:"shell,omitempty"`
	Args  *ArgsScope  `json:"args,omitempty"`
}

// ShellScope covers a shell command line held in Argument when every
// simple command in it is covered by one of Rules.
type ShellScope struct {
	Argument string      `json:"argument"`
	Rules    []ShellRule `json:"rules"`
}

// ShellRule covers a simple command whose words start with Words (a prefix
// of at least two words) followed by words none of which is an option
// (starts with "-") — or any words when Options is set — or, when Exact,
// whose words are exactly Words. A grant stored before options were told
// apart has no Options: it covers no option words.
type ShellRule struct {
	Words   []string `json:"words"`
	Exact   bool     `json:"exact,omitempty"`
	Options bool     `json:"options,omitempty"`
}

// ArgsScope covers arguments whose keys are all among Fixed and Free, with
// every Fixed key present and its value's digest (ValueDigest) equal to
// the one kept: the values themselves are not stored (invariant 7).
type ArgsScope struct {
	Fixed map[string]string `json:"fixed"`
	Free  []string          `json:"free,omitempty"`
}

// Scope size limits: a rule longer than this is not offered.
const (
	ScopeMaxWords = 32
	ScopeMaxChars = 1024
)

// exactOnly are commands whose later arguments can delete or send
// anything (`rm -rf ~`, `dd of=/dev/sda`, `curl -T secret …`): only the
// exact command is offered, never a prefix. Commands that run other
// commands are never covered at all (runners, the one table).
var exactOnly = map[string]bool{
	"find": true, "rm": true, "dd": true, "mkfs": true, "chmod": true, "chown": true, "curl": true, "wget": true,
	"ssh": true, "scp": true, "rsync": true, "shred": true, "truncate": true, "sftp": true, "nc": true,
}

// coverable says whether any scope may cover c, and if not, why in words.
// It is judged on the parsed command; the raw text was judged before
// (ShellRawHidden).
func coverable(c ShellCommand) (bool, string) {
	switch {
	case c.Keyword != "":
		return false, "“" + c.Keyword + "” runs other commands: never covered"
	case c.Negated:
		return false, "“!” runs other commands: never covered"
	case c.Depth > 0 || c.In != "":
		return false, "it runs " + c.In.Words() + ": never covered"
	case len(c.Redirects) > 0:
		return false, "redirections are never covered"
	case len(c.Words) == 0:
		return false, "nothing to run"
	}
	for _, w := range c.Words {
		switch {
		case w.Assign:
			return false, "variable assignments are never covered"
		case !w.Literal:
			return false, "words computed when it runs (variables, substitutions) are never covered"
		case w.hidden || ShellRawHidden(w.Value) || ShellRawHidden(w.Text):
			return false, "hidden characters are never covered"
		case w.expands:
			return false, "words the shell expands (*, ?, [, {a,b}, ~) are never covered"
		}
	}
	if runsOthers(c.Words[0].Value) {
		return false, "“" + c.Words[0].Value + "” runs other commands: never covered"
	}
	if len(c.Words) > 1 && subRunner(c.Words[0].Value, c.Words[1].Value) {
		return false, "“" + c.Words[0].Value + " " + c.Words[1].Value + "” runs other commands: never covered"
	}
	return true, ""
}

// prefixAllowed reports whether a prefix rule with these words may be
// offered or honoured: two words or more, not of a command that may only
// be covered exactly, nor of one that runs other commands.
func prefixAllowed(words []string) bool {
	return len(words) >= 2 && !exactOnly[runnerKey(words[0])] && !runsOthers(words[0]) &&
		!subRunner(words[0], words[1])
}

// covers reports whether rule r covers the simple command c: its words
// start with the rule's (are exactly them, for an exact rule), and for a
// prefix, no further word is an option (starts with "-") unless the rule
// allows options — never for a command whose options are known to run
// other code — and, for a command that reads NAME=value words as settings
// (make), none is one.
func (r ShellRule) covers(c ShellCommand) bool {
	if ok, _ := coverable(c); !ok || len(r.Words) == 0 || len(c.Words) < len(r.Words) {
		return false
	}
	if r.Exact && len(c.Words) != len(r.Words) {
		return false
	}
	for i, w := range r.Words {
		if c.Words[i].Value != w {
			return false
		}
	}
	if r.Exact {
		return true
	}
	if !prefixAllowed(r.Words) || (r.Options && !OptionsMayWiden(r.Words[0])) {
		return false // a prefix never offered is never honoured either
	}
	for _, w := range c.Words[len(r.Words):] {
		if isOption(w.Value) && !r.Options {
			return false
		}
		if settingWord(r.Words[0], w.Value) {
			return false
		}
	}
	return true
}

// Covers reports whether the scope covers a call with these arguments. It
// fails closed: arguments that are not one JSON object, a shell command
// that does not parse or holds a part it cannot read, and a malformed
// scope are not covered.
func (s GrantScope) Covers(a Arguments) bool {
	if !a.Parsed || (s.Shell == nil) == (s.Args == nil) {
		return false
	}
	if s.Shell != nil {
		return s.Shell.covers(a)
	}
	return s.Args.covers(a)
}

func (s *ShellScope) covers(a Arguments) bool {
	if len(s.Rules) == 0 {
		return false
	}
	cmd, ok := stringMember(a, s.Argument)
	if !ok {
		return false
	}
	if ShellRawHidden(cmd) {
		return false // judged on the raw text first: bash may read it otherwise
	}
	return s.coversView(ParseShell(cmd, ""))
}

// coversView judges a parsed command line: one that did not parse, holds
// a payload that could not be read (Incomplete) or a comment, or runs
// nothing is not covered; a chain is covered only when every simple command in it is.
func (s *ShellScope) coversView(v ShellView) bool {
	if !v.Parsed || v.Incomplete || v.comments || len(v.Commands) == 0 {
		return false
	}
	for _, c := range v.Commands {
		if !slices.ContainsFunc(s.Rules, func(r ShellRule) bool { return r.covers(c) }) {
			return false
		}
	}
	return true
}

func (s *ArgsScope) covers(a Arguments) bool {
	seen := 0
	for _, m := range a.Members {
		want, fixed := s.Fixed[m.Key]
		switch {
		case fixed:
			if got, ok := ValueDigest(m.Value); !ok || got != want {
				return false
			}
			seen++
		case !slices.Contains(s.Free, m.Key):
			return false // a key the scope does not name (an added cc) is not covered
		}
	}
	return seen == len(s.Fixed)
}

// stringMember is the string value of key in a, if a has it as a string.
func stringMember(a Arguments, key string) (string, bool) {
	for _, m := range a.Members {
		if m.Key == key {
			if m.Value.Kind() != '"' {
				return "", false
			}
			return valueText(m.Value), true
		}
	}
	return "", false
}

// ValueDigest is the identity of one argument value: "sha256:" and the
// hex SHA-256 of its canonical form, so that the same value in another
// spelling (escapes, spacing, key order) is the same.
func ValueDigest(v []byte) (string, bool) {
	c, err := Canonical(v)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:]), true
}

// Fingerprint identifies a scope without its contents: "sha256:" and the
// hex SHA-256 of its JSON. Audit lines name a scope by it (and by its
// grant), never by the words or values it holds (invariant 7).
func (s GrantScope) Fingerprint() string {
	b, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Kind is "shell" or "arguments".
func (s GrantScope) Kind() string {
	if s.Shell != nil {
		return "shell"
	}
	return "arguments"
}

// CoveringWords is what a stored scoped grant covers, in words, as it is
// judged today: a shell scope's words are built from its stored rules
// (so that a grant given before options were told apart reads "but
// options"); any other scope keeps the words confirmed when it was given
// (its values are not stored, only their digests).
func CoveringWords(data []byte, stored string) string {
	var s GrantScope
	if len(data) == 0 || json.Unmarshal(data, &s) != nil || s.Shell == nil {
		return stored
	}
	return s.Words()
}

// isOption reports whether a word reads as an option: it starts with "-",
// or with another dash or minus sign (some programs take those for "-").
func isOption(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return r == '-' || r == '\u2212' || unicode.Is(unicode.Pd, r)
}
