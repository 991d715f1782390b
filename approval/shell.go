package approval

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ShellView is what a shell command line does, read by a real shell parser
// without expanding or running anything: its simple commands in the order
// written, nested ones included, and what a reviewer must not miss, in
// words. The card shows it and policy conditions test it
// (shell_commands), so it is parsed once, by ParseShell, into plain data.
type ShellView struct {
	Parsed bool `json:"parsed"`
	// Problem is the parser's message when the command did not parse; the
	// reviewer then reads the raw text whole.
	Problem  string         `json:"problem,omitempty"`
	Commands []ShellCommand `json:"commands,omitempty"`
	Flags    []ShellFlag    `json:"flags,omitempty"`
	// Hosts are the network destinations the command names, in order and
	// without repeats.
	Hosts []HostCheck `json:"hosts,omitempty"`
	// Incomplete is set when a nested payload (`bash -c '…'`, `eval …`,
	// a here-doc fed to a shell) could not be read: it did not parse or is
	// nested too deep. A policy condition then fails closed.
	Incomplete bool `json:"incomplete,omitempty"`
	// Shortened is set when the stored view keeps only part of the parse
	// (see Bounded); the flags were computed on the whole of it.
	Shortened bool `json:"shortened,omitempty"`
	// comments: the line holds a comment. Where a comment ends is where
	// parsers and bash have disagreed (`# x\` then a new line), so a
	// scoped grant never covers a line with one.
	comments bool
	// Total is how many simple commands the whole parse has when Commands
	// keeps fewer of them (0: Commands holds every one).
	Total int `json:"total,omitempty"`
	// Last is the last simple command, kept (bounded) when Commands stops
	// short of it: the end of a command is often the dangerous part.
	Last *ShellCommand `json:"last,omitempty"`
}

// Count is how many simple commands the command has, kept or not.
func (v ShellView) Count() int { return max(v.Total, len(v.Commands)) }

// ShellCommand is one simple command: its words as written, the operator
// that joins it to the next one at its level, where it sits, and its
// redirections.
type ShellCommand struct {
	Words []ShellWord `json:"words"`
	// Joiner is "|", "|&", "&&", "||", ";" or "&" (run in the background);
	// empty when nothing follows.
	Joiner string `json:"joiner,omitempty"`
	// In says where the command sits (a ShellPlace); empty at the top level.
	In ShellPlace `json:"in,omitempty"`
	// Depth is how deeply it is nested: 0 at the top level.
	Depth     int             `json:"depth,omitempty"`
	Redirects []ShellRedirect `json:"redirects,omitempty"`
	Negated   bool            `json:"negated,omitempty"` // `! cmd`
	// Keyword is "time" or "coproc" when the command runs under that
	// shell keyword (every command of the statement it prefixes).
	Keyword string `json:"keyword,omitempty"`
}

// ShellWord is one word of a simple command.
type ShellWord struct {
	Text string `json:"text"` // as written, quotes and all
	// Literal is set when the word's value is fixed by the text alone
	// (plain, quoted or escaped characters, no expansion); Value is then
	// that value with quotes and escapes removed.
	Literal bool   `json:"literal,omitempty"`
	Value   string `json:"value,omitempty"`
	// Assign marks a leading variable assignment (NAME=value).
	Assign bool `json:"assign,omitempty"`
	// hidden: the word's own text, outside the substitutions in it (whose
	// commands are read on their own), holds hidden characters.
	hidden bool
	// expands: the shell expands part of a literal word when it runs it
	// (an unquoted glob, a brace list, a tilde), so its value is not what
	// the program receives.
	expands bool
}

// ShellRedirect is one redirection: its operator (with a file descriptor
// number when written, as in "2>") and its target; for a here-document
// the target is its delimiter and Lines counts its body.
type ShellRedirect struct {
	Op     string    `json:"op"`
	Target ShellWord `json:"target"`
	Lines  int       `json:"lines,omitempty"`
}

// Shell parsing limits.
const (
	// ShellMaxDepth bounds how deeply payloads (bash -c, eval, here-docs
	// fed to a shell) are parsed in turn.
	ShellMaxDepth = 4
	// ShellMaxInput is the longest command line parsed; a longer one is not
	// parsed (read it whole).
	ShellMaxInput = 256 << 10
)

// ShellUnparsedNote is what a reviewer reads about a command that did not
// parse.
const ShellUnparsedNote = "could not be parsed — read it whole"

// ParseShell reads a command line as bash would parse it, without
// expanding or running anything. workdir is the agent's working directory
// when the runtime names it ("" when unknown): paths written outside it
// are flagged.
func ParseShell(src, workdir string) ShellView {
	if len(src) > ShellMaxInput {
		return ShellView{Problem: "the command is too long to read here"}
	}
	file, err := parseShellText(src)
	if err != nil {
		return ShellView{Problem: err.Error()}
	}
	w := &shellWalker{workdir: workdir}
	w.stmts(src, file.Stmts, 0, PlaceTop, nil)
	v := ShellView{Parsed: true, Commands: w.cmds, Incomplete: w.incomplete, comments: hasComments(file)}
	v.Flags, v.Hosts = shellFlags(w)
	return v
}

func parseShellText(src string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
}

// hasComments reports whether a parse holds a comment anywhere.
func hasComments(f *syntax.File) bool {
	found := len(f.Last) > 0
	syntax.Walk(f, func(n syntax.Node) bool {
		if _, ok := n.(*syntax.Comment); ok {
			found = true
		}
		return !found
	})
	return found
}

// shellWalker collects the simple commands of one parse, nested payloads
// included.
type shellWalker struct {
	workdir    string
	cmds       []ShellCommand
	incomplete bool
	// pipes are the ranges of commands on either side of each pipe:
	// [from, mid) writes into [mid, to).
	pipes [][3]int
	// wordSubs maps a command's index to the range of the commands nested
	// in its words' substitutions.
	wordSubs map[int][2]int
	// hereScripts lists the shells fed a script by a here-document.
	hereScripts []string
	// downloaders counts the commands that download: [i] in w.cmds[:i].
	downloaders []int
	// unreadable lists payloads that could not be read, as written.
	unreadable []string
}

// stmts walks a list of statements; it returns the index of the last
// command at this level (-1 when none), whose joiner a caller may set.
func (w *shellWalker) stmts(src string, list []*syntax.Stmt, depth int, in ShellPlace, redirs []ShellRedirect) int {
	last := -1
	for i, s := range list {
		if l := w.stmt(src, s, depth, in, redirs); l >= 0 {
			last = l
			if s.Background {
				w.cmds[l].Joiner = "&"
			} else if i < len(list)-1 {
				w.cmds[l].Joiner = ";"
			}
		}
	}
	return last
}

// stmt walks one statement; its redirections apply to every command in it.
func (w *shellWalker) stmt(src string, s *syntax.Stmt, depth int, in ShellPlace, inherited []ShellRedirect) int {
	redirs := inherited
	if len(s.Redirs) > 0 {
		redirs = append([]ShellRedirect(nil), inherited...)
		for _, r := range s.Redirs {
			redirs = append(redirs, redirect(src, r))
		}
		// Deeply nested groups each with a redirection would otherwise
		// cost their square; the closest ones are kept.
		redirs = redirs[max(0, len(redirs)-ShellStoredWords):]
	}
	last := -1
	start := len(w.cmds)
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		last = w.call(src, c, s, depth, in, redirs)
	case *syntax.BinaryCmd:
		start := len(w.cmds)
		x := w.stmt(src, c.X, depth, in, redirs)
		mid := len(w.cmds)
		if x >= 0 {
			w.cmds[x].Joiner = c.Op.String()
		}
		last = w.stmt(src, c.Y, depth, in, redirs)
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			w.pipes = append(w.pipes, [3]int{start, mid, len(w.cmds)})
		}
	case *syntax.Subshell:
		last = w.stmts(src, c.Stmts, depth+1, PlaceSubshell, redirs)
	case *syntax.Block:
		last = w.stmts(src, c.Stmts, depth+1, PlaceGroup, redirs)
	case nil:
		// Redirections alone (`> file` empties the file) are a command too.
		last = len(w.cmds)
		w.cmds = append(w.cmds, ShellCommand{In: in, Depth: depth, Redirects: redirs})
	case *syntax.FuncDecl:
		w.stmt(src, c.Body, depth+1, PlaceFunction, redirs)
	case *syntax.TimeClause:
		if c.Stmt != nil {
			last = w.stmt(src, c.Stmt, depth, in, redirs)
		}
		w.keyword(start, "time")
	case *syntax.CoprocClause:
		if c.Stmt != nil {
			last = w.stmt(src, c.Stmt, depth, in, redirs)
		}
		w.keyword(start, "coproc")
	case *syntax.DeclClause, *syntax.TestClause, *syntax.ArithmCmd, *syntax.LetClause:
		// export/declare/local, [[ ]], (( )) and let are commands too: a
		// policy must see `export PATH=…` before `git status`.
		last = w.builtin(src, s.Cmd, depth, in, redirs)
	default:
		// if, while, for, case, [[ ]], (( )), declare…: every command and
		// substitution inside counts, wherever it sits.
		w.nested(src, s.Cmd, depth+1, PlaceControl)
	}
	if last >= 0 && s.Negated {
		w.cmds[last].Negated = true
	}
	// Substitutions in redirection targets and here-document bodies run too.
	for _, r := range s.Redirs {
		if r.Word != nil {
			w.substitutions(src, r.Word, depth+1)
		}
		if r.Hdoc != nil {
			w.hereDoc(src, r.Hdoc, depth+1)
		}
	}
	return last
}

// keyword marks the commands recorded since start as run under a shell
// keyword (time, coproc), unless an inner one already named one.
func (w *shellWalker) keyword(start int, kw string) {
	for i := start; i < len(w.cmds); i++ {
		if w.cmds[i].Keyword == "" {
			w.cmds[i].Keyword = kw
		}
	}
}

// builtin records a command the parser reads as its own kind of clause
// (export, declare, local, [[ ]], (( )), let): its keyword and the rest as
// written, never literal, then the substitutions inside it.
func (w *shellWalker) builtin(src string, n syntax.Node, depth int, in ShellPlace, redirs []ShellRedirect) int {
	cmd := ShellCommand{In: in, Depth: depth, Redirects: redirs}
	if d, ok := n.(*syntax.DeclClause); ok {
		cmd.Words = append(cmd.Words, ShellWord{Text: d.Variant.Value, Literal: true, Value: d.Variant.Value})
		for _, a := range d.Args {
			text := nodeText(src, a)
			cmd.Words = append(cmd.Words, ShellWord{Text: text, hidden: HasHidden(text, MultiLine)})
		}
	} else {
		// The keyword, then the rest as written: [[ -f x ]] is
		// ["[[", "-f x ]]"].
		text := nodeText(src, n)
		kw, rest, _ := strings.Cut(text, " ")
		cmd.Words = []ShellWord{{Text: kw, Literal: true, Value: kw}}
		if rest != "" {
			cmd.Words = append(cmd.Words, ShellWord{Text: rest, hidden: HasHidden(rest, MultiLine)})
		}
	}
	idx := len(w.cmds)
	w.cmds = append(w.cmds, cmd)
	w.nested(src, n, depth+1, PlaceControl)
	return idx
}

// nested walks the statements inside a compound command other than a
// subshell or a group, each at the given depth.
func (w *shellWalker) nested(src string, n syntax.Node, depth int, in ShellPlace) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Stmt:
			w.stmt(src, x, depth, in, nil)
			return false
		case *syntax.CmdSubst:
			w.stmts(src, x.Stmts, depth, PlaceSubstitution, nil)
			return false
		case *syntax.ProcSubst:
			w.stmts(src, x.Stmts, depth, PlaceProcess, nil)
			return false
		}
		return true
	})
}

// substitutions walks the commands of every $( … ), backtick and <( … )
// inside a word or an assignment.
func (w *shellWalker) substitutions(src string, n syntax.Node, depth int) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			w.stmts(src, x.Stmts, depth, PlaceSubstitution, nil)
			return false
		case *syntax.ProcSubst:
			w.stmts(src, x.Stmts, depth, PlaceProcess, nil)
			return false
		}
		return true
	})
}

// hereDoc walks the substitutions in a here-document's body: in an
// unquoted here-document they run when the command does.
func (w *shellWalker) hereDoc(src string, body *syntax.Word, depth int) {
	syntax.Walk(body, func(n syntax.Node) bool {
		if x, ok := n.(*syntax.CmdSubst); ok {
			w.stmts(src, x.Stmts, depth, PlaceHereDoc, nil)
			return false
		}
		return true
	})
}

// call records one simple command, then the commands nested in its words
// and in the payloads it hands to a shell or to eval.
func (w *shellWalker) call(src string, c *syntax.CallExpr, s *syntax.Stmt, depth int, in ShellPlace, redirs []ShellRedirect) int {
	cmd := ShellCommand{In: in, Depth: depth, Redirects: redirs}
	for _, a := range c.Assigns {
		hidden := a.Name != nil && HasHidden(a.Name.Value, MultiLine) || a.Value != nil && ownHidden(src, a.Value)
		cmd.Words = append(cmd.Words, ShellWord{Text: nodeText(src, a), Assign: true, hidden: hidden})
	}
	for _, a := range c.Args {
		cmd.Words = append(cmd.Words, word(src, a))
	}
	idx := len(w.cmds)
	w.cmds = append(w.cmds, cmd)
	for _, a := range c.Assigns {
		w.substitutions(src, a, depth+1) // its value, array elements and index
	}
	for _, a := range c.Args {
		w.substitutions(src, a, depth+1)
	}
	if len(w.cmds) > idx+1 {
		if w.wordSubs == nil {
			w.wordSubs = map[int][2]int{}
		}
		w.wordSubs[idx] = [2]int{idx + 1, len(w.cmds)}
	}
	w.payload(cmd, s, depth)
	return idx
}

// payload parses, in turn, what a command hands to a shell as a script:
// the string of `bash -c '…'`, the words of `eval …`, or a here-document
// or here-string fed to a shell's input.
func (w *shellWalker) payload(cmd ShellCommand, s *syntax.Stmt, depth int) {
	words, _ := unwrap(cmd.Words)
	if len(words) == 0 {
		return
	}
	name := commandName(words[0])
	var text string
	var place ShellPlace
	var ok bool
	switch {
	case name == "eval":
		place = PlaceEval
		text, ok = joinValues(words[1:])
	case isShell(name):
		i := shellCArg(words)
		switch {
		case i > 0 && i < len(words):
			place, text, ok = PlacePayload, words[i].Value, words[i].Literal
		case i > 0:
			return // `bash -c` with nothing to run fails on its own
		case scriptArg(words) > 0:
			return // runs a script file: its text is not in the call
		default:
			var found bool
			if text, found, ok = hereInput(s); !found {
				return // reads its script from a pipe or the terminal (see the pipe flags)
			}
			place = PlaceHereDoc
			w.hereScripts = append(w.hereScripts, joinTexts(cmd.Words))
		}
	default:
		return
	}
	if !ok {
		w.incomplete = true
		w.unreadable = append(w.unreadable, joinTexts(words))
		return
	}
	if depth+1 > ShellMaxDepth {
		w.incomplete = true
		w.unreadable = append(w.unreadable, joinTexts(words))
		return
	}
	file, err := parseShellText(text)
	if err != nil {
		w.incomplete = true
		w.unreadable = append(w.unreadable, joinTexts(words))
		return
	}
	w.stmts(text, file.Stmts, depth+1, place, nil)
}
