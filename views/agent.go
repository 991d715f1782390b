package views

import "github.com/countersign/countersign/approval"

// AgentView says who asks: the name of the API key the call came with (set
// by an admin) and what the runtime says about itself (its own, unverified
// words: shown as untrusted text).
type AgentView struct {
	KeyName   string
	Client    string
	Host      string
	Directory string
}

// HasRuntime reports whether the runtime said anything about itself.
func (a AgentView) HasRuntime() bool { return a.Client != "" || a.Host != "" || a.Directory != "" }

// HasHidden reports whether any of it holds a hidden character.
func (a AgentView) HasHidden() bool { return hasHidden(a.KeyName, a.Client, a.Host, a.Directory) }

// diffFileNote is the few words beside a file's path: what the call does
// to the file as a whole.
func diffFileNote(f approval.DiffFile) string {
	switch {
	case f.Binary:
		return "binary file"
	case f.IsNew():
		return "new file"
	case f.IsDeleted():
		return "deleted"
	case f.IsMoved():
		return "moved"
	}
	return ""
}

// diffSign is a line's mark: + added, − removed (the marks carry the
// meaning; colour only repeats it).
func diffSign(k approval.DiffLineKind) string {
	switch k {
	case approval.DiffAdd:
		return "+"
	case approval.DiffRemove:
		return "−"
	}
	return ""
}

// diffSignWords is the mark in words, for screen readers.
func diffSignWords(k approval.DiffLineKind) string {
	switch k {
	case approval.DiffAdd:
		return "added: "
	case approval.DiffRemove:
		return "removed: "
	}
	return ""
}

// lineNo is a line number, blank when the line is not in that file.
func lineNo(n int) string {
	if n == 0 {
		return ""
	}
	return itoa(n)
}

// hunkHeader is a hunk's "@@ -a,b +c,d @@" line as diff writes it.
func hunkHeader(h approval.DiffHunk) string {
	return "@@ -" + itoa(h.OldStart) + "," + itoa(h.OldLines) + " +" + itoa(h.NewStart) + "," + itoa(h.NewLines) + " @@"
}

// diffCounts is how many lines a file's diff adds and removes, in words.
func diffCounts(f approval.DiffFile) string {
	add, rem := 0, 0
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			switch l.Kind {
			case approval.DiffAdd:
				add++
			case approval.DiffRemove:
				rem++
			}
		}
	}
	return "+" + itoa(add) + " −" + itoa(rem)
}
