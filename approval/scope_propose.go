package approval

import (
	"strconv"
	"strings"
)

// ScopeProposal is the widest scope the server offers for one call's
// "Always allow calls like this", as the person reads it before
// confirming: for a shell tool each simple command of the call with what
// may cover it, for any other tool each key with its value. The person
// may narrow it (ChooseScope), never widen it.
type ScopeProposal struct {
	// Shell is set when the tool names a shell argument and at least one
	// simple command of the call may be covered.
	Shell    []ShellChoice `json:"shell,omitempty"`
	Argument string        `json:"argument,omitempty"` // the shell argument's name
	// Keys are the call's keys otherwise, in the order sent.
	Keys []KeyChoice `json:"keys,omitempty"`
	// Fixed is a key that must stay fixed to its value: a shell tool's
	// command when none of its commands may be covered (freeing it would
	// allow any command).
	Fixed string `json:"fixed,omitempty"`
}

// ShellChoice is one simple command of the call: Prefix is its leading
// words (the first word and one argument) when a prefix is offered, Exact
// its words when it may be covered at all; Why says why not. A prefix
// covers further words only when none is an option; Options says the
// person may widen it to "and any options" (never for a command whose
// options are known to run other code, OptionsRunCode).
type ShellChoice struct {
	Text    string   `json:"text"` // as written, shortened
	Prefix  []string `json:"prefix,omitempty"`
	Options bool     `json:"options,omitempty"`
	Exact   []string `json:"exact,omitempty"`
	Why     string   `json:"why,omitempty"`
}

// KeyChoice is one key of the call: its value's digest and the value as
// shown (shortened).
type KeyChoice struct {
	Key    string `json:"key"`
	Digest string `json:"digest"`
	Shown  string `json:"shown"`
}

// Proposal limits: a call with more simple commands than this gets no
// shell proposal, and one with more keys none at all. The proposal is kept
// with the item's preview, so that the card shows it without reading the
// arguments again; the decision derives it again from the full text.
const (
	ScopeMaxCommands = 16
	ScopeMaxKeys     = 32
)

// ShowChars is how much of a value a scope's words show.
const scopeShowChars = 80

// ProposeScope is the proposal for a call to a tool whose shell argument
// is shellArg ("" for none). A shell call with nothing that may be covered
// falls back to the keys (the exact arguments).
func ProposeScope(a Arguments, shellArg string) ScopeProposal {
	if !a.Parsed {
		return ScopeProposal{}
	}
	if cmd, ok := stringMember(a, shellArg); ok && shellArg != "" {
		if ShellRawHidden(cmd) {
			// Judged on the raw text first: nothing is offered, not even the
			// exact arguments, for a line bash may read otherwise.
			return ScopeProposal{}
		}
		if v := ParseShell(cmd, ""); v.Parsed && !v.Incomplete && len(v.Commands) <= ScopeMaxCommands {
			p := ScopeProposal{Argument: shellArg}
			any := false
			for _, c := range v.Commands {
				ch := shellChoice(c)
				any = any || ch.Exact != nil
				p.Shell = append(p.Shell, ch)
			}
			if any {
				return p
			}
		}
	}
	if len(a.Members) > ScopeMaxKeys {
		return ScopeProposal{}
	}
	var p ScopeProposal
	if _, ok := stringMember(a, shellArg); ok && shellArg != "" {
		p.Fixed = shellArg
	}
	for _, m := range a.Members {
		d, ok := ValueDigest(m.Value)
		if !ok {
			return ScopeProposal{}
		}
		p.Keys = append(p.Keys, KeyChoice{Key: m.Key, Digest: d, Shown: shownText(valueText(m.Value))})
	}
	return p
}

func shellChoice(c ShellCommand) ShellChoice {
	ch := ShellChoice{Text: shownText(c.Text())}
	ok, why := coverable(c)
	if !ok {
		ch.Why = why
		return ch
	}
	words := make([]string, len(c.Words))
	n := 0
	for i, w := range c.Words {
		words[i] = w.Value
		n += len(w.Value)
	}
	if len(words) > ScopeMaxWords || n > ScopeMaxChars {
		ch.Why = "too long to keep as a scope"
		return ch
	}
	ch.Exact = words
	switch {
	case len(words) < 2:
	case exactOnly[runnerKey(words[0])]:
		ch.Why = "“" + words[0] + "” can run or delete anything through its arguments: only this exact command"
	case isOption(words[1]):
	case prefixAllowed(words[:2]):
		ch.Prefix = words[:2]
		ch.Options = OptionsMayWiden(words[0])
		if _, known := OptionsRunCode[runnerKey(words[0])]; known {
			ch.Why = "Options of “" + words[0] + "” can run other code: later calls with options always ask"
		}
	}
	return ch
}

// shownText is untrusted text as a scope keeps it to show: shortened,
// and with hidden characters (NUL included, which Postgres cannot store)
// as visible markers.
func shownText(s string) string { return Visible(scopeShort(s), SingleLine).String() }

func scopeShort(s string) string {
	r := []rune(s)
	if len(r) > scopeShowChars {
		return string(r[:scopeShowChars-1]) + "…"
	}
	return s
}

// Empty reports whether nothing can be offered (arguments that did not
// parse).
func (p ScopeProposal) Empty() bool { return len(p.Shell) == 0 && len(p.Keys) == 0 }

// ChooseScope narrows the proposal by the person's choices, as posted in
// the form's scope fields: for a shell proposal "N:prefix", "N:options"
// (the prefix and any options, where offered), "N:exact" or "N:none" for
// the Nth simple command (a command not named keeps its
// widest choice); for keys "key:NAME" for each key kept fixed to its value
// (none named: every key fixed — the exact arguments). Anything else, or a
// choice wider than proposed, is refused. It returns the scope and its
// words.
func ChooseScope(p ScopeProposal, choices []string) (GrantScope, string, error) {
	if p.Empty() {
		return GrantScope{}, "", scopeErr("These arguments can’t be matched: approve this call only, or reject it.")
	}
	if len(p.Shell) > 0 {
		return chooseShell(p, choices)
	}
	return chooseKeys(p, choices)
}

func scopeErr(msg string) error {
	return Errorf(KindUnprocessable, "scope_invalid", "%s", msg)
}

func chooseShell(p ScopeProposal, choices []string) (GrantScope, string, error) {
	pick := make([]string, len(p.Shell))
	for _, c := range choices {
		i, how, ok := strings.Cut(c, ":")
		n, err := strconv.Atoi(i)
		if !ok || err != nil || n < 0 || n >= len(p.Shell) || pick[n] != "" {
			return GrantScope{}, "", scopeErr("That scope is not one offered for this call.")
		}
		pick[n] = how
	}
	s := &ShellScope{Argument: p.Argument}
	for i, ch := range p.Shell {
		how := pick[i]
		if how == "" {
			how = "prefix"
			if ch.Prefix == nil {
				how = "exact"
			}
		}
		var r ShellRule
		switch {
		case how == "none" || (how == "exact" && ch.Exact == nil && pick[i] == ""):
			continue
		case how == "prefix" && ch.Prefix != nil:
			r = ShellRule{Words: ch.Prefix}
		case how == "options" && ch.Prefix != nil && ch.Options:
			r = ShellRule{Words: ch.Prefix, Options: true}
		case how == "exact" && ch.Exact != nil:
			r = ShellRule{Words: ch.Exact, Exact: true}
		default:
			return GrantScope{}, "", scopeErr("That scope is wider than the one offered for this call.")
		}
		if !hasRule(s.Rules, r) {
			s.Rules = append(s.Rules, r)
		}
	}
	if len(s.Rules) == 0 {
		return GrantScope{}, "", scopeErr("Choose at least one command to allow from now on.")
	}
	g := GrantScope{Shell: s}
	return g, g.Words(), nil
}

func hasRule(rs []ShellRule, r ShellRule) bool {
	for _, x := range rs {
		if x.Exact == r.Exact && x.Options == r.Options && strings.Join(x.Words, "\x00") == strings.Join(r.Words, "\x00") {
			return true
		}
	}
	return false
}

func chooseKeys(p ScopeProposal, choices []string) (GrantScope, string, error) {
	fixed := map[string]bool{}
	for _, c := range choices {
		k, ok := strings.CutPrefix(c, "key:")
		if !ok || fixed[k] || !hasKey(p.Keys, k) {
			return GrantScope{}, "", scopeErr("That scope is not one offered for this call.")
		}
		fixed[k] = true
	}
	if p.Fixed != "" && len(choices) > 0 && !fixed[p.Fixed] {
		return GrantScope{}, "", scopeErr("The command must stay fixed: freeing it would allow any command.")
	}
	s := &ArgsScope{Fixed: map[string]string{}}
	var fixedWords, freeWords []string
	for _, k := range p.Keys {
		if len(choices) == 0 || fixed[k.Key] {
			s.Fixed[k.Key] = k.Digest
			fixedWords = append(fixedWords, "`"+k.Key+"` = "+k.Shown)
		} else {
			s.Free = append(s.Free, k.Key)
			freeWords = append(freeWords, "`"+k.Key+"`")
		}
	}
	words := "calls with no arguments"
	switch {
	case len(p.Keys) == 0:
	case len(s.Free) == 0:
		words = "calls with exactly these arguments: " + strings.Join(fixedWords, ", ")
	default:
		words = "calls with " + strings.Join(fixedWords, ", ") + "; any " + andList(freeWords) + "; no other arguments"
	}
	return GrantScope{Args: s}, words, nil
}

func hasKey(ks []KeyChoice, k string) bool {
	for _, x := range ks {
		if x.Key == k {
			return true
		}
	}
	return false
}

// Words says exactly what a shell scope covers, as the card, the
// Auto-approve tab and the policy page show it.
func (s GrantScope) Words() string {
	if s.Shell == nil {
		return ""
	}
	var plain, options, exact []string
	for _, r := range s.Shell.Rules {
		w := "`" + scopeShort(strings.Join(r.Words, " ")) + "`"
		switch {
		case r.Exact:
			exact = append(exact, w)
		case r.Options:
			options = append(options, w)
		default:
			plain = append(plain, w)
		}
	}
	var parts []string
	if len(plain) > 0 {
		parts = append(parts, "starting with "+orList(plain)+", then any words but options (none starting with -)")
	}
	if len(options) > 0 {
		parts = append(parts, "starting with "+orList(options)+", then any words, options included (option words can change what a command runs)")
	}
	if len(exact) > 0 {
		parts = append(parts, "exactly "+orList(exact))
	}
	out := "commands " + strings.Join(parts, "; or ")
	if len(s.Shell.Rules) > 1 {
		out += " (a chain only when every command in it is one of these)"
	}
	return out
}

func orList(ws []string) string  { return joinList(ws, "or") }
func andList(ws []string) string { return joinList(ws, "and") }

func joinList(ws []string, last string) string {
	if len(ws) < 2 {
		return strings.Join(ws, "")
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " " + last + " " + ws[len(ws)-1]
}
