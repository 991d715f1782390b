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
// is; a file that cannot be read, or whose chunks are not found in it, is
// diffed from the patch alone, under the note.
func diffApplyPatch(b *strings.Builder, input []byte, cwd string, read readFile) error {
	files, err := parsePatch(patchText(input))
	if err != nil || len(files) == 0 {
		return errors.New("not a patch")
	}
	for _, f := range files {
		path := abs(f.path, cwd)
		switch f.op {
		case "add":
			unifiedFile(b, "", path, "", joinLines(f.add))
		case "delete":
			if cur, err := read(path); err == nil && cur != "" {
				unifiedFile(b, path, "", cur, "")
			} else {
				b.WriteString(approval.UnreadNote + "\ndiff --git a/" + path + " b/" + path + "\ndeleted file mode 100644\n")
			}
		case "update":
			diffUpdate(b, f, path, abs(f.moveTo, cwd), read)
		}
	}
	return nil
}

// diffUpdate diffs one updated (maybe moved) file.
func diffUpdate(b *strings.Builder, f patchFile, path, moveTo string, read readFile) {
	newPath := path
	if moveTo != "" {
		newPath = moveTo
	}
	cur, err := read(path)
	if err == nil {
		if next, ok := applyChunks(cur, f.chunks); ok {
			if next == cur && newPath != path {
				b.WriteString("diff --git a/" + path + " b/" + newPath + "\nrename from " + path + "\nrename to " + newPath + "\n")
				return
			}
			unifiedFile(b, path, newPath, cur, next)
			return
		}
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
		unifiedFile(b, path, newPath, joinLines(old), joinLines(next), approval.UnreadNote)
	}
}

// applyChunks applies an update's chunks to text as Codex does: each
// chunk's old lines (kept and removed) are found after the previous chunk
// and after its "@@" line, if named; exactly, else ignoring trailing and
// then surrounding blanks.
func applyChunks(text string, chunks []patchChunk) (string, bool) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	endsWithNewline := strings.HasSuffix(text, "\n")
	at := 0
	var out []string
	for _, c := range chunks {
		if c.after != "" {
			k := findLines(lines, []string{c.after}, at)
			if k < 0 {
				return "", false
			}
			out = append(out, lines[at:k+1]...)
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
			if k = findLines(lines, old, at); k < 0 {
				return "", false
			}
		}
		out = append(out, lines[at:k]...)
		out = append(out, next...)
		at = k + len(old)
	}
	out = append(out, lines[at:]...)
	s := strings.Join(out, "\n")
	if endsWithNewline || text == "" {
		s += "\n"
	}
	return s, true
}

// findLines finds want in lines at or after from: exactly, then with
// trailing blanks ignored, then with surrounding blanks ignored; -1 when
// it is not there.
func findLines(lines, want []string, from int) int {
	for _, norm := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t") },
		strings.TrimSpace,
	} {
	next:
		for k := from; k+len(want) <= len(lines); k++ {
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

// joinLines is lines as text, each ended by a line break.
func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
