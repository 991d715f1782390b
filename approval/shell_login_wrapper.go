package approval

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Codex 0.169.0 runs the model's shell commands as the user's login bash
// with the script as one argument, and its approval request names the
// command joined back into one line: `/bin/bash -lc '<script>'` (the
// script quoted the way shlex quotes: single-quoted runs, with a quote
// itself in double quotes). What runs is the script, read by a login bash.
//
// loginBashPaths are the shells such a line may start with; loginBashFlag the one
// flag word it carries.
var loginBashPaths = []string{"/bin/bash", "/usr/bin/bash"}

const loginBashFlag = "-lc"

// UnwrapLoginBash returns the script and the wrapper ("/bin/bash -lc") when
// line is exactly that shape: one simple command of three words, the
// bash path and -lc as plain words, and the script as one word made only
// of quoted text that expands nothing (single-quoted runs, double-quoted
// runs without $, ` or \). Anything else — another shell or flag, more
// words, a redirection, an assignment, a second command, an expansion, a
// comment — is not unwrapped: the whole line stays the command.
func UnwrapLoginBash(line string) (script, wrapper string, ok bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(line), "")
	if err != nil || len(f.Stmts) != 1 || len(f.Last) != 0 {
		return "", "", false
	}
	st := f.Stmts[0]
	if st.Negated || st.Background || st.Coprocess || len(st.Redirs) != 0 || len(st.Comments) != 0 {
		return "", "", false
	}
	call, isCall := st.Cmd.(*syntax.CallExpr)
	if !isCall || len(call.Assigns) != 0 || len(call.Args) != 3 {
		return "", "", false
	}
	shell, okShell := plainLitWord(call.Args[0])
	flag, okFlag := plainLitWord(call.Args[1])
	if !okShell || !okFlag || flag != loginBashFlag || !slices.Contains(loginBashPaths, shell) {
		return "", "", false
	}
	script, ok = quotedOnlyWord(call.Args[2])
	if !ok || strings.TrimSpace(script) == "" {
		return "", "", false
	}
	// The line must be exactly the three words, single-spaced: nothing the
	// parser dropped (a line continuation, a trailing comment) hides.
	if line != shell+" "+flag+" "+line[call.Args[2].Pos().Offset():] || call.Args[2].End().Offset() != uint(len(line)) {
		return "", "", false
	}
	return script, shell + " " + flag, true
}

// plainLitWord is a word that is one unquoted literal with no escapes.
func plainLitWord(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	if !ok || strings.ContainsAny(lit.Value, "\\*?[]{}~$`'\"") {
		return "", false
	}
	return lit.Value, true
}

// quotedOnlyWord is a word made only of quoted parts that expand nothing.
func quotedOnlyWord(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false // $'…' reads escapes
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok || strings.ContainsAny(lit.Value, "\\$`") {
					return "", false
				}
				b.WriteString(lit.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), len(w.Parts) > 0
}
