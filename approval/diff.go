package approval

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DiffLineKind says what one line of a diff is.
type DiffLineKind string

// Kinds of diff lines.
const (
	DiffContext DiffLineKind = "context" // unchanged, shown for context
	DiffAdd     DiffLineKind = "add"     // added by the call
	DiffRemove  DiffLineKind = "remove"  // removed by the call
	DiffNoEOL   DiffLineKind = "noeol"   // "\ No newline at end of file" after the line above
	DiffFold    DiffLineKind = "fold"    // unchanged lines left out of the preview (DiffPreview)
)

// DiffLine is one line of a hunk with its numbers in the old and the new
// file (0 where the line is not in that file).
type DiffLine struct {
	Kind DiffLineKind `json:"k"`
	Old  int          `json:"o,omitempty"`
	New  int          `json:"n,omitempty"`
	Text string       `json:"t,omitempty"`
	// Folded counts the lines a DiffFold line stands for.
	Folded int `json:"f,omitempty"`
	// Cut counts the characters left out of the middle of a long line,
	// between Text (its head) and Tail.
	Cut  int    `json:"c,omitempty"`
	Tail string `json:"tl,omitempty"`
}

// DiffHunk is one "@@ -a,b +c,d @@" section.
type DiffHunk struct {
	OldStart int        `json:"old_start"`
	OldLines int        `json:"old_lines"`
	NewStart int        `json:"new_start"`
	NewLines int        `json:"new_lines"`
	Section  string     `json:"section,omitempty"` // the text after the second @@, if any
	Lines    []DiffLine `json:"lines"`
}

// DiffFile is one file of a diff.
type DiffFile struct {
	OldPath string     `json:"old_path,omitempty"` // "" for a new file
	NewPath string     `json:"new_path,omitempty"` // "" for a deleted file
	Binary  bool       `json:"binary,omitempty"`   // "Binary files … differ": no lines
	Hunks   []DiffHunk `json:"hunks,omitempty"`
	// Unread is set when the runtime says it could not read the current
	// file, so the diff was computed from the call's arguments alone: its
	// line numbers count from the edited text, not from the file.
	Unread bool `json:"unread,omitempty"`
	// UnreadWhy is the runtime's reason for not reading the file (not a
	// regular file, a secret, outside the working directory…), if it said.
	UnreadWhy string `json:"unread_why,omitempty"`
	// NotApplied is set when the runtime read the file but the edit does
	// not apply to it (the text it replaces is not there): the agent will
	// fail to make it, and the diff comes from the arguments alone.
	NotApplied bool `json:"not_applied,omitempty"`
	// LinkTarget is where the path leads when it is a symbolic link: the
	// file the call really changes.
	LinkTarget string `json:"link_target,omitempty"`
	// PreImage is the SHA-256 (hex) of the file as the runtime read it to
	// make this diff: what the person approved the edit of. A runtime that
	// finds the file changed before the call runs asks again.
	PreImage string `json:"pre_image,omitempty"`
}

// IsNew reports a file the call creates.
func (f DiffFile) IsNew() bool { return f.OldPath == "" && f.NewPath != "" }

// IsDeleted reports a file the call deletes.
func (f DiffFile) IsDeleted() bool { return f.NewPath == "" && f.OldPath != "" }

// IsMoved reports a file the call renames.
func (f DiffFile) IsMoved() bool { return f.OldPath != "" && f.NewPath != "" && f.OldPath != f.NewPath }

// Path is the file's path as a reviewer reads it: the new one, or the old
// one for a deleted file.
func (f DiffFile) Path() string {
	if f.NewPath != "" {
		return f.NewPath
	}
	return f.OldPath
}

// Diff is a parsed unified diff.
type Diff struct {
	Files []DiffFile `json:"files"`
}

// UnreadNote is the comment line a runtime puts in a file's header to say
// that it could not read the current file (see DiffFile.Unread).
// A reason may follow after ": " (UnreadNote + ": not a regular file").
const UnreadNote = "# countersign: current file not read"

// NotAppliedNote is the comment line a runtime puts in a file's header to
// say that it read the file and the edit does not apply to it.
const NotAppliedNote = "# countersign: does not apply to the current file"

// LinkNote starts the comment line naming a symbolic link's target.
const LinkNote = "# countersign: link to "

// PreImageNote starts the comment line with the SHA-256 of the file as the
// runtime read it.
const PreImageNote = "# countersign: sha256 "

// errDiff is the parser's error: the diff is shown as raw text instead.
var errDiff = errors.New("not a unified diff")

// ParseDiff reads a unified diff (as diff -u and git diff write it): one or
// more files, each a "---"/"+++" header and hunks whose line counts match
// their headers. It fails on anything else — a line it does not know, a
// hunk shorter or longer than its header says — so that a reviewer never
// reads a diff that was only half understood; such a diff is shown raw.
func ParseDiff(s string) (Diff, error) {
	p := diffParser{lines: strings.Split(strings.TrimSuffix(strings.ReplaceAll(s, "\r\n", "\n"), "\n"), "\n")}
	var d Diff
	for p.i < len(p.lines) {
		f, err := p.file()
		if err != nil {
			return Diff{}, fmt.Errorf("%w: line %d: %v", errDiff, p.i+1, err)
		}
		d.Files = append(d.Files, f)
	}
	if len(d.Files) == 0 {
		return Diff{}, fmt.Errorf("%w: no file", errDiff)
	}
	return d, nil
}

type diffParser struct {
	lines []string
	i     int
}

// file reads one file's header lines and hunks.
func (p *diffParser) file() (DiffFile, error) {
	var f DiffFile
	git := false
	var gitOld, gitNew string
	for first := p.i; p.i < len(p.lines); p.i++ {
		l := p.lines[p.i]
		switch {
		case strings.HasPrefix(l, "diff --git "):
			if p.i > first {
				// A git file with no hunks (a mode change, a pure
				// rename) ends where the next one starts.
				if !git {
					return f, fmt.Errorf("unexpected line %q", clip(l))
				}
				f.OldPath, f.NewPath = gitOld, gitNew
				return f, nil
			}
			git = true
			gitOld, gitNew, _ = strings.Cut(strings.TrimPrefix(l, "diff --git "), " ")
			gitOld, gitNew = stripGitPrefixes(gitOld, gitNew)
		case l == UnreadNote:
			f.Unread = true
		case strings.HasPrefix(l, UnreadNote+": "):
			f.Unread, f.UnreadWhy = true, strings.TrimPrefix(l, UnreadNote+": ")
		case l == NotAppliedNote:
			f.NotApplied = true
		case strings.HasPrefix(l, LinkNote):
			f.LinkTarget = strings.TrimPrefix(l, LinkNote)
		case strings.HasPrefix(l, PreImageNote):
			f.PreImage = strings.TrimPrefix(l, PreImageNote)
		case git && strings.HasPrefix(l, "Binary files ") && strings.HasSuffix(l, " differ"):
			f.Binary, f.OldPath, f.NewPath = true, gitOld, gitNew
			p.i++
			return f, nil
		case git && strings.HasPrefix(l, "new file mode "):
			gitOld = ""
		case git && strings.HasPrefix(l, "deleted file mode "):
			gitNew = ""
		case git && strings.HasPrefix(l, "rename from "):
			gitOld = strings.TrimPrefix(l, "rename from ")
		case git && strings.HasPrefix(l, "rename to "):
			gitNew = strings.TrimPrefix(l, "rename to ")
		case git && (strings.HasPrefix(l, "index ") || strings.HasPrefix(l, "old mode ") || strings.HasPrefix(l, "new mode ") ||
			strings.HasPrefix(l, "similarity index ") || strings.HasPrefix(l, "dissimilarity index ")):
		case strings.HasPrefix(l, "--- "):
			return p.body(f)
		default:
			return f, fmt.Errorf("unexpected line %q", clip(l))
		}
	}
	if git {
		f.OldPath, f.NewPath = gitOld, gitNew
		return f, nil
	}
	return f, errors.New("a file header without ---/+++ lines")
}

// body reads the "---"/"+++" lines at p.i and the hunks after them.
func (p *diffParser) body(f DiffFile) (DiffFile, error) {
	oldPath := headerPath(p.lines[p.i], "--- ")
	p.i++
	if p.i >= len(p.lines) || !strings.HasPrefix(p.lines[p.i], "+++ ") {
		return f, errors.New(`"---" without "+++"`)
	}
	newPath := headerPath(p.lines[p.i], "+++ ")
	p.i++
	if oldPath == "/dev/null" && newPath == "/dev/null" {
		return f, errors.New("no file named")
	}
	f.OldPath, f.NewPath = stripGitPrefixes(oldPath, newPath)
	for p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], "@@ ") {
		h, err := p.hunk()
		if err != nil {
			return f, err
		}
		f.Hunks = append(f.Hunks, h)
	}
	if len(f.Hunks) == 0 {
		return f, errors.New("a file without hunks")
	}
	return f, nil
}

// hunk reads one hunk: its header and exactly the lines it counts.
func (p *diffParser) hunk() (DiffHunk, error) {
	var h DiffHunk
	rest := strings.TrimPrefix(p.lines[p.i], "@@ ")
	ranges, section, ok := strings.Cut(rest, " @@")
	if !ok {
		return h, errors.New("a hunk header without its closing @@")
	}
	h.Section = strings.TrimPrefix(section, " ")
	oldR, newR, ok := strings.Cut(ranges, " ")
	var err1, err2 error
	h.OldStart, h.OldLines, err1 = hunkRange(oldR, "-")
	h.NewStart, h.NewLines, err2 = hunkRange(newR, "+")
	if !ok || err1 != nil || err2 != nil {
		return h, fmt.Errorf("a hunk header that does not parse: %q", clip(p.lines[p.i]))
	}
	p.i++
	oldN, newN := h.OldStart, h.NewStart
	if h.OldLines == 0 {
		oldN++ // "-0,0" and "-5,0" name the line before the insertion
	}
	if h.NewLines == 0 {
		newN++
	}
	oldLeft, newLeft := h.OldLines, h.NewLines
	for p.i < len(p.lines) && (oldLeft > 0 || newLeft > 0 || strings.HasPrefix(p.lines[p.i], `\`)) {
		l := p.lines[p.i]
		var kind byte
		if l == "" {
			kind = ' ' // some tools drop the space of an empty context line
		} else {
			kind, l = l[0], l[1:]
		}
		switch {
		case kind == ' ' && oldLeft > 0 && newLeft > 0:
			h.Lines = append(h.Lines, DiffLine{Kind: DiffContext, Old: oldN, New: newN, Text: l})
			oldN, newN, oldLeft, newLeft = oldN+1, newN+1, oldLeft-1, newLeft-1
		case kind == '-' && oldLeft > 0:
			h.Lines = append(h.Lines, DiffLine{Kind: DiffRemove, Old: oldN, Text: l})
			oldN, oldLeft = oldN+1, oldLeft-1
		case kind == '+' && newLeft > 0:
			h.Lines = append(h.Lines, DiffLine{Kind: DiffAdd, New: newN, Text: l})
			newN, newLeft = newN+1, newLeft-1
		case kind == '\\' && len(h.Lines) > 0 && h.Lines[len(h.Lines)-1].Kind != DiffNoEOL:
			h.Lines = append(h.Lines, DiffLine{Kind: DiffNoEOL, Text: strings.TrimSpace(l)})
		default:
			return h, fmt.Errorf("a hunk line that does not fit its header: %q", clip(p.lines[p.i]))
		}
		p.i++
	}
	if oldLeft > 0 || newLeft > 0 {
		return h, errors.New("a hunk shorter than its header says")
	}
	return h, nil
}

// hunkRange reads "-12,3" (or "-12", one line).
func hunkRange(s, sign string) (start, n int, err error) {
	s, ok := strings.CutPrefix(s, sign)
	if !ok {
		return 0, 0, errDiff
	}
	a, b, comma := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil || start < 0 {
		return 0, 0, errDiff
	}
	n = 1
	if comma {
		if n, err = strconv.Atoi(b); err != nil || n < 0 {
			return 0, 0, errDiff
		}
	}
	return start, n, nil
}

// headerPath is the path of a "---"/"+++" line, without a tab and what
// follows it (a time stamp).
func headerPath(l, prefix string) string {
	path := strings.TrimPrefix(l, prefix)
	if i := strings.IndexByte(path, '\t'); i >= 0 {
		path = path[:i]
	}
	return path
}

// stripGitPrefixes drops git's "a/" and "b/" when both sides carry them (or
// one side is /dev/null), and turns /dev/null into "" (no such file). A
// path that merely starts with "a/" on its own is left whole.
func stripGitPrefixes(oldPath, newPath string) (string, string) {
	oldGit := oldPath == "/dev/null" || (strings.HasPrefix(oldPath, "a/") && len(oldPath) > 2)
	newGit := newPath == "/dev/null" || (strings.HasPrefix(newPath, "b/") && len(newPath) > 2)
	if oldGit && newGit {
		oldPath, newPath = strings.TrimPrefix(oldPath, "a/"), strings.TrimPrefix(newPath, "b/")
	}
	if oldPath == "/dev/null" {
		oldPath = ""
	}
	if newPath == "/dev/null" {
		newPath = ""
	}
	return oldPath, newPath
}

// clip keeps an error message short: the first 60 bytes of a line.
func clip(l string) string {
	if len(l) > 60 {
		return strings.ToValidUTF8(l[:60], "") + "…"
	}
	return l
}
