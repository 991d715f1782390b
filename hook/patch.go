package hook

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/countersign/countersign/approval"
)

// patchFile is one file of a Codex patch ("*** Begin Patch" … "*** End
// Patch"): added, deleted, or updated (and maybe moved) by chunks.
type patchFile struct {
	op     string // "add", "delete" or "update"
	path   string
	moveTo string
	add    []string     // an added file's lines
	chunks []patchChunk // an updated file's changes
}

// patchChunk is one "@@" section of an update: the line it follows (if
// named) and its lines, each ' ' kept, '-' removed or '+' added.
type patchChunk struct {
	after string
	lines []string
}

// patchText finds the patch in apply_patch's input: Codex sends it as
// tool_input.command; older and freeform forms as input or patch, or as
// the last word of a command list (["apply_patch", "*** Begin Patch…"]).
func patchText(input []byte) string {
	var in map[string]json.RawMessage
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	for _, k := range []string{"command", "patch", "input"} {
		var s string
		if json.Unmarshal(in[k], &s) == nil && strings.Contains(s, "*** Begin Patch") {
			return s
		}
		var list []string
		if json.Unmarshal(in[k], &list) == nil && len(list) > 0 && strings.Contains(list[len(list)-1], "*** Begin Patch") {
			return list[len(list)-1]
		}
	}
	return ""
}

// parsePatch reads a Codex patch. It fails on a line it does not know.
func parsePatch(s string) ([]patchFile, error) {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) != "*** Begin Patch" {
		i++ // a heredoc's first line ("apply_patch <<'EOF'") and the like
	}
	if i == len(lines) {
		return nil, errors.New("no *** Begin Patch")
	}
	var files []patchFile
	var cur *patchFile
	for i++; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.TrimSpace(l) == "*** End Patch":
			return files, nil
		case strings.HasPrefix(l, "*** Add File: "):
			files = append(files, patchFile{op: "add", path: strings.TrimPrefix(l, "*** Add File: ")})
		case strings.HasPrefix(l, "*** Delete File: "):
			files = append(files, patchFile{op: "delete", path: strings.TrimPrefix(l, "*** Delete File: ")})
		case strings.HasPrefix(l, "*** Update File: "):
			files = append(files, patchFile{op: "update", path: strings.TrimPrefix(l, "*** Update File: ")})
		case cur != nil && cur.op == "update" && strings.HasPrefix(l, "*** Move to: "):
			cur.moveTo = strings.TrimPrefix(l, "*** Move to: ")
		case cur != nil && cur.op == "update" && strings.TrimSpace(l) == "*** End of File":
		case cur != nil && cur.op == "update" && (l == "@@" || strings.HasPrefix(l, "@@ ")):
			cur.chunks = append(cur.chunks, patchChunk{after: strings.TrimSpace(strings.TrimPrefix(l, "@@"))})
		case cur != nil && cur.op == "add" && strings.HasPrefix(l, "+"):
			cur.add = append(cur.add, l[1:])
		case cur != nil && cur.op == "update" && (l == "" || strings.ContainsAny(l[:1], " +-")):
			if len(cur.chunks) == 0 {
				cur.chunks = append(cur.chunks, patchChunk{})
			}
			if l == "" {
				l = " "
			}
			c := &cur.chunks[len(cur.chunks)-1]
			c.lines = append(c.lines, l)
		default:
			return nil, errors.New("unexpected patch line")
		}
		if len(files) > 0 {
			cur = &files[len(files)-1]
		}
	}
	return files, nil // a patch without its end line: what was read
}

// diffApplyPatch diffs each file of a Codex patch against the file as it
// is, applying the files in order as Codex does (a second update of a file
// starts from the first one's result). A file that cannot be read is
// diffed from the patch alone, under the note; one the patch does not
// apply to, under the note that says so (Codex then applies none of it).
func diffApplyPatch(b *diffWriter, input []byte, cwd string, read readFile) error {
	files, err := parsePatch(patchText(input))
	if err != nil || len(files) == 0 {
		return errors.New("not a patch")
	}
	seen := map[string]*string{} // what earlier files of the patch left at a path (nil: deleted)
	readNow := func(path string) (fileText, error) {
		if t, ok := seen[path]; ok {
			if t == nil {
				return fileText{}, errNotFound
			}
			return fileText{text: *t}, nil
		}
		return read(path)
	}
	for _, f := range files {
		path := abs(f.path, cwd)
		switch f.op {
		case "add":
			text := joinLines(f.add)
			b.budget.spend(len(text))
			unifiedFile(b, "", path, "", text)
			seen[path] = &text
		case "delete":
			cur, err := readNow(path)
			switch {
			case err == nil && cur.text != "":
				unifiedFile(b, path, "", cur.text, "", linkNotes(cur)...)
			case err == nil:
				b.WriteString("diff --git a/" + path + " b/" + path + "\ndeleted file mode 100644\n")
			default:
				for _, n := range deleteNotes(cur, err) {
					b.WriteString(n + "\n")
				}
				b.WriteString("diff --git a/" + path + " b/" + path + "\ndeleted file mode 100644\n")
			}
			seen[path] = nil
		case "update":
			to := path
			if f.moveTo != "" {
				to = abs(f.moveTo, cwd)
			}
			if next, ok := diffUpdate(b, f, path, to, readNow); ok {
				if to != path {
					seen[path] = nil
				}
				seen[to] = &next
			}
		}
	}
	return nil
}

// deleteNotes are the notes of a file deleted unread: it does not exist
// (Codex then fails the patch), or was not read.
func deleteNotes(cur fileText, err error) []string {
	if errors.Is(err, errNotFound) {
		return []string{approval.NotAppliedNote}
	}
	return unreadNotes(cur, err)
}

// diffUpdate diffs one updated (maybe moved) file, and is its new text
// when the update applies.
func diffUpdate(b *diffWriter, f patchFile, path, newPath string, read readFile) (string, bool) {
	cur, err := read(path)
	if err == nil {
		if next, ok := applyChunks(cur.text, f.chunks, b.budget); ok {
			if next == cur.text && newPath != path {
				b.WriteString("diff --git a/" + path + " b/" + newPath + "\nrename from " + path + "\nrename to " + newPath + "\n")
				return next, true
			}
			unifiedFile(b, path, newPath, cur.text, next, linkNotes(cur)...)
			return next, true
		}
	}
	notes := unreadNotes(cur, err)
	if err == nil || errors.Is(err, errNotFound) {
		// Read and not applying, or not there: Codex fails the patch.
		notes = append(linkNotes(cur), approval.NotAppliedNote)
	}
	for _, c := range f.chunks {
		var old, next []string
		for _, l := range c.lines {
			if l[0] != '+' {
				old = append(old, l[1:])
			}
			if l[0] != '-' {
				next = append(next, l[1:])
			}
		}
		unifiedFile(b, path, newPath, joinLines(old), joinLines(next), notes...)
	}
	return "", false
}

// applyChunks applies an update's chunks to text as Codex 0.169.0 does:
// each chunk's old lines (kept and removed) are found after the previous
// chunk and after its "@@" line, if named; exactly, else ignoring trailing,
// then surrounding blanks, then with typographic punctuation read as ASCII.
// Untouched lines keep their own endings; the lines a chunk writes end as
// the file's first line does (CRLF or LF), and so does a last line that
// had no line break: Codex always ends the file with one.
func applyChunks(text string, chunks []patchChunk, b *budget) (string, bool) {
	b.spend(len(text))
	eol := "\n"
	if i := strings.IndexByte(text, '\n'); i > 0 && text[i-1] == '\r' {
		eol = "\r\n"
	}
	raw := strings.SplitAfter(text, "\n")
	if raw[len(raw)-1] == "" {
		raw = raw[:len(raw)-1]
	}
	lines := make([]string, len(raw)) // without their endings
	for i, l := range raw {
		lines[i] = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
	}
	var out strings.Builder
	keep := func(from, to int) {
		for _, l := range raw[from:to] {
			out.WriteString(l)
			if !strings.HasSuffix(l, "\n") {
				out.WriteString(eol)
			}
		}
	}
	at := 0
	for _, c := range chunks {
		if c.after != "" {
			k := findLines(lines, []string{c.after}, at, b)
			if k < 0 {
				return "", false
			}
			keep(at, k+1)
			at = k + 1
		}
		var old, next []string
		for _, l := range c.lines {
			if l[0] != '+' {
				old = append(old, l[1:])
			}
			if l[0] != '-' {
				next = append(next, l[1:])
			}
		}
		k := at
		if len(old) > 0 {
			if k = findLines(lines, old, at, b); k < 0 {
				return "", false
			}
		}
		keep(at, k)
		for _, l := range next {
			out.WriteString(l + eol)
		}
		at = k + len(old)
	}
	keep(at, len(raw))
	return out.String(), true
}

// findLines finds want in lines at or after from: exactly, then with
// trailing blanks ignored, then with surrounding blanks ignored, then with
// typographic punctuation read as ASCII; -1 when it is not there.
func findLines(lines, want []string, from int, b *budget) int {
	for _, norm := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t\r\n\v\f") },
		func(s string) string { return strings.TrimSpace(s) },
		func(s string) string { return strings.Map(asciiPunct, strings.TrimSpace(s)) },
	} {
	next:
		for k := from; k+len(want) <= len(lines); k++ {
			b.spend(len(want))
			for j, w := range want {
				if norm(lines[k+j]) != norm(w) {
					continue next
				}
			}
			return k
		}
	}
	return -1
}

// asciiPunct reads the typographic dashes, quotes and spaces Codex
// matches loosely as their ASCII forms.
func asciiPunct(r rune) rune {
	switch r {
	case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
		return '-'
	case '\u2018', '\u2019', '\u201A', '\u201B':
		return '\''
	case '\u201C', '\u201D', '\u201E', '\u201F':
		return '"'
	case '\u00A0', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008', '\u2009', '\u200A', '\u202F', '\u205F', '\u3000':
		return ' '
	}
	return r
}

// joinLines is lines as text, each ended by a line break.
func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
