package approval

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word reads one word: its text as written and, when nothing in it expands
// when it runs, its value with quotes and escapes removed.
func word(src string, w *syntax.Word) ShellWord {
	out := ShellWord{Text: nodeText(src, w), hidden: ownHidden(src, w)}
	var b, bare strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(x.Value, false))
			bare.WriteString(unquotedSkeleton(x.Value))
		case *syntax.SglQuoted:
			if x.Dollar { // $'…' holds escapes of its own: read it whole
				return out
			}
			b.WriteString(x.Value)
			bare.WriteByte('q')
		case *syntax.DblQuoted:
			if x.Dollar {
				return out
			}
			bare.WriteByte('q')
			for _, q := range x.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return out
				}
				b.WriteString(unescape(lit.Value, true))
			}
		default: // $X, ${…}, $( … ), backticks, $(( … )), <( … ), globs in extglob form, {a,b}
			return out
		}
	}
	out.Literal, out.Value = true, b.String()
	out.expands = expandsWhenRun(bare.String())
	return out
}

// unquotedSkeleton is an unquoted part of a word as the shell's expansions
// see it: each escaped character replaced by a harmless letter.
func unquotedSkeleton(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			b.WriteByte('e')
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// expandsWhenRun reports whether bash expands a word with this unquoted
// skeleton: a glob character (* ? [), a brace list ({a,b} or {1..3}) or a
// tilde at its start or after = or : (~, ~+, ~user, a=~/x).
func expandsWhenRun(bare string) bool {
	switch {
	case strings.ContainsAny(bare, "*?["):
		return true
	case strings.Contains(bare, "{") && (strings.Contains(bare, ",") || strings.Contains(bare, "..")):
		return true
	}
	return strings.HasPrefix(bare, "~") || strings.Contains(bare, "=~") || strings.Contains(bare, ":~")
}

// ownHidden reports whether a word's text holds hidden characters outside
// its command and process substitutions.
func ownHidden(src string, w *syntax.Word) bool {
	hidden := false
	syntax.Walk(w, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false
		case *syntax.Lit:
			hidden = hidden || HasHidden(x.Value, MultiLine)
		case *syntax.SglQuoted:
			hidden = hidden || HasHidden(x.Value, MultiLine)
		}
		return !hidden
	})
	return hidden
}

// unescape removes the backslashes the shell removes: any escaped
// character outside quotes, and only \$ \` \" \\ and line continuations
// inside double quotes.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
			i++
		case !quoted || strings.IndexByte("$`\"\\", next) >= 0:
			b.WriteByte(next)
			i++
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// commandName is the name a command word runs, without its directory
// ("/usr/bin/rm" → "rm"); "" when the word is not literal, so that a
// computed name never passes for a known one.
func commandName(w ShellWord) string {
	if !w.Literal || w.Assign {
		return ""
	}
	return path.Base(w.Value)
}

// Values are the words as a policy reads them: a literal word's value, and
// any other word as written — with its $, quotes or backticks, so that a
// word computed when the command runs never equals a plain name. Each
// redirection follows as one more word, its operator and target together
// (">out.txt", "2>&1", "<<EOF"), so that a command writing a file never
// equals the same command without it.
func (c ShellCommand) Values() []string {
	out := make([]string, 0, len(c.Words)+len(c.Redirects))
	for _, w := range c.Words {
		out = append(out, w.policyValue())
	}
	for _, r := range c.Redirects {
		out = append(out, r.Op+r.Target.policyValue())
	}
	return out
}

func (w ShellWord) policyValue() string {
	if w.Literal && !w.Assign {
		return w.Value
	}
	return w.Text
}

// Text is the command's words as written, joined by spaces.
func (c ShellCommand) Text() string { return joinTexts(c.Words) }

func joinTexts(ws []ShellWord) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.Text
	}
	return strings.Join(parts, " ")
}

// joinValues joins literal words with spaces, as eval does; ok is false
// when one of them is not literal.
func joinValues(ws []ShellWord) (string, bool) {
	parts := make([]string, len(ws))
	for i, w := range ws {
		if !w.Literal {
			return "", false
		}
		parts[i] = w.Value
	}
	return strings.Join(parts, " "), true
}

// unwrap skips the leading assignments and wrappers (sudo, env, xargs…)
// with their options, and returns the words of the command that really
// runs, and the wrappers skipped.
func unwrap(ws []ShellWord) ([]ShellWord, []string) {
	var skipped []string
	for len(ws) > 0 && ws[0].Assign {
		ws = ws[1:]
	}
	for len(ws) > 0 {
		name := commandName(ws[0])
		opts, ok := wrapperOptions(name)
		if !ok {
			break
		}
		skipped = append(skipped, name)
		ws = skipOptions(name, strings.Fields(opts), ws[1:])
	}
	return ws, skipped
}

// skipOptions skips a wrapper's options (and the arguments of those that
// take one) up to the command it runs.
func skipOptions(name string, takesArg []string, ws []ShellWord) []ShellWord {
	for len(ws) > 0 {
		v := ws[0].Value
		switch {
		case !ws[0].Literal:
			return ws
		case v == "--":
			return ws[1:]
		case name == "env" && strings.Contains(v, "=") && !strings.HasPrefix(v, "-"):
			ws = ws[1:]
			continue
		case positionalFirst[runnerKey(name)] && !strings.HasPrefix(v, "-"):
			return ws[1:] // the duration, the new root, the lock file…
		case !strings.HasPrefix(v, "-") || v == "-":
			return ws
		}
		if hasOption(takesArg, v) && !strings.Contains(v, "=") && len(ws) > 1 {
			ws = ws[1:]
		}
		ws = ws[1:]
	}
	return ws
}

// hasOption reports whether an option word is one of opts, or a short
// option cluster ending with one of them (sudo -Eu root).
func hasOption(opts []string, v string) bool {
	for _, o := range opts {
		if v == o || (len(o) == 2 && !strings.HasPrefix(v, "--") && strings.HasSuffix(v, o[1:]) && len(v) > 2) {
			return true
		}
	}
	return false
}

// positionalFirst are wrappers whose first word after the options is
// theirs (a duration, a root, a lock file, a CPU mask, a group), not the
// command they run.
var positionalFirst = map[string]bool{"timeout": true, "chroot": true, "flock": true, "taskset": true, "chrt": true, "sg": true}

// shellCArg is the index of the command string of `bash -c STRING`
// (len(words) when it is missing), or 0 when the shell has no -c.
func shellCArg(words []ShellWord) int {
	for i := 1; i < len(words); i++ {
		v := words[i].Value
		if !words[i].Literal || !strings.HasPrefix(v, "-") || v == "-" || v == "--" {
			return 0
		}
		if !strings.HasPrefix(v, "--") && strings.Contains(v[1:], "c") {
			// The string is the first word after the options.
			for j := i + 1; j < len(words); j++ {
				u := words[j].Value
				if words[j].Literal && strings.HasPrefix(u, "-") && u != "-" {
					if u == "--" {
						return min(j+1, len(words))
					}
					if u == "-o" || u == "+o" || u == "-O" || u == "+O" {
						j++
					}
					continue
				}
				return j
			}
			return len(words)
		}
		if v == "-o" || v == "+o" || v == "-O" || v == "+O" || v == "--rcfile" || v == "--init-file" {
			i++
		}
	}
	return 0
}

// scriptArg is the index of the script file a shell runs, or 0 when it
// reads its script from its input (no argument, or -s).
func scriptArg(words []ShellWord) int {
	for i := 1; i < len(words); i++ {
		v := words[i].Value
		if words[i].Literal && strings.HasPrefix(v, "-") {
			if v == "--" {
				if i+1 < len(words) {
					return i + 1
				}
				return 0
			}
			if !strings.HasPrefix(v, "--") && strings.Contains(v, "s") {
				return 0 // -s: the script comes from the input, the rest are its arguments
			}
			if v == "-o" || v == "+o" || v == "-O" || v == "+O" || v == "--rcfile" || v == "--init-file" {
				i++
			}
			continue
		}
		return i
	}
	return 0
}

// hereInput is the script a statement feeds to a shell's input through a
// here-document or here-string: found when there is one, ok when its text
// is fixed before it runs (no expansion, no escapes to undo).
func hereInput(s *syntax.Stmt) (text string, found, ok bool) {
	for _, r := range s.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				return "", true, true
			}
			text = r.Hdoc.Lit()
			quoted := r.Word != nil && r.Word.Lit() == ""
			return text, true, text != "" && (quoted || !strings.Contains(text, "\\"))
		case syntax.WordHdoc:
			if r.Word != nil {
				wd := word("", r.Word)
				return wd.Value, true, wd.Literal
			}
		}
	}
	return "", false, false
}

// redirect is one redirection as written.
func redirect(src string, r *syntax.Redirect) ShellRedirect {
	op := r.Op.String()
	if r.N != nil {
		op = r.N.Value + op
	}
	out := ShellRedirect{Op: op}
	if r.Word != nil {
		out.Target = word(src, r.Word)
	}
	if r.Hdoc != nil {
		out.Lines = strings.Count(nodeText(src, r.Hdoc), "\n")
	}
	return out
}

// nodeText is a node's text exactly as written in src.
func nodeText(src string, n syntax.Node) string {
	from, to := int(n.Pos().Offset()), int(n.End().Offset())
	if from < 0 || to > len(src) || from > to {
		var b strings.Builder
		_ = syntax.NewPrinter().Print(&b, n)
		return b.String()
	}
	return src[from:to]
}
