package approval

import "strings"

// Behaviour is what a call may do that its card warns of in a badge: make
// a change that cannot be undone, send data out of the organisation.
type Behaviour struct {
	Destructive bool
	SendsOut    bool
}

// CallBehaviour is the tool-wide behaviour tool as it applies to one call,
// where the call's own arguments say better (issue 42). The one rule for
// the inbox row, the card and the request page:
//
//   - an edit whose diff names only files inside the workspace (relative
//     paths, none leaving it) sends nothing out;
//   - a shell line read whole, with no flag and no network destination,
//     whose every simple command is a local one (echo, cat, grep, mkdir…)
//     sends nothing out; and when none of its redirections truncates a
//     file (`>>` appends, `> /dev/null` discards) it changes nothing that
//     cannot be undone either.
//
// Anything else keeps the tool's behaviour: a shell line that did not
// parse, was kept only in part, runs another program, names a host or
// writes outside the workspace (`curl … | sudo bash`) is read as the
// tool says. The rule only ever drops a badge; it never adds one.
func CallBehaviour(tool Behaviour, p ArgumentPreview, d *DiffPreview) Behaviour {
	out := tool
	if workspaceDiff(d) {
		out.SendsOut = false
	}
	if sh := p.Shell; sh != nil && localShell(sh) && !holdsHash(p) {
		out.SendsOut = false
		if !truncates(sh) {
			out.Destructive = false
		}
	}
	return out
}

// workspaceDiff reports a parsed diff whose every file is named by a
// relative path that stays inside the workspace.
func workspaceDiff(d *DiffPreview) bool {
	if d == nil || !d.Parsed || len(d.Files) == 0 {
		return false
	}
	for _, f := range d.Files {
		for _, p := range []string{f.OldPath, f.NewPath} {
			if p == "" && f.OldPath != f.NewPath {
				continue // a new or deleted file names one side only
			}
			if !insideWorkspace(p) {
				return false
			}
		}
	}
	return true
}

// insideWorkspace reports a relative path that does not climb out.
func insideWorkspace(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "\\") {
		return false
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return false
		}
	}
	return true
}

// holdsHash reports a '#' in any shown argument: where a shell comment
// ends is where parsers and bash have disagreed, so a line that may hold
// one is read as its tool says.
func holdsHash(p ArgumentPreview) bool {
	if p.RawShortened || p.MoreKeys > 0 || !p.Parsed {
		return true
	}
	for _, l := range p.Lines {
		if l.Shortened || strings.Contains(l.Value, "#") || strings.Contains(l.Tail, "#") {
			return true
		}
	}
	return false
}

// localCommands run on the machine, read or print, and at most create a
// directory or an empty file: none reaches the network, deletes, moves,
// overwrites or runs another program.
var localCommands = map[string]bool{
	"echo": true, "printf": true, "cat": true, "ls": true, "pwd": true, "true": true, "false": true, ":": true,
	"test": true, "[": true, "grep": true, "egrep": true, "fgrep": true, "head": true, "tail": true, "wc": true,
	"sort": true, "uniq": true, "cut": true, "tr": true, "date": true, "mkdir": true, "touch": true, "diff": true,
	"basename": true, "dirname": true, "stat": true, "file": true, "realpath": true, "cd": true,
}

// localShell reports a shell line read whole, with no flag and no host,
// whose every simple command (nested ones too) is a local command named
// as written, without a path.
func localShell(sh *ShellView) bool {
	if !sh.Parsed || sh.Incomplete || sh.Shortened || sh.Total > len(sh.Commands) || sh.comments ||
		len(sh.Flags) > 0 || len(sh.Hosts) > 0 || len(sh.Commands) == 0 {
		return false
	}
	for _, c := range sh.Commands {
		if c.Keyword == "coproc" {
			return false
		}
		name := ""
		for _, w := range c.Words {
			if !w.Assign {
				if !w.Literal || w.hidden || w.expands {
					return false
				}
				name = w.Value
				break
			}
		}
		if name != "" && !localCommands[name] {
			return false
		}
	}
	return true
}

// truncates reports a redirection that may overwrite a file: anything but
// reading, appending, duplicating a descriptor or writing to a harmless
// device.
func truncates(sh *ShellView) bool {
	for _, c := range sh.Commands {
		for _, r := range c.Redirects {
			op := strings.TrimLeft(r.Op, "0123456789")
			switch {
			case op == "<" || op == "<<" || op == "<<-" || op == "<<<" || op == ">>" || op == "&>>":
			case (op == ">&" || op == "<&") && (r.Target.Value == "-" || r.Target.Value != "" && strings.Trim(r.Target.Value, "0123456789") == ""):
			case r.Target.Literal && harmlessDevice(r.Target.Value):
			default:
				return true
			}
		}
	}
	return false
}
