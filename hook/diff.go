package hook

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// maxReadBytes bounds the file the hook reads to diff an edit against: a
// larger file is not read, and the diff comes from the arguments alone.
const maxReadBytes = 2 << 20

// errNotFound is a file that does not exist (yet).
var errNotFound = errors.New("no such file")

// readFile reads a text file for a diff: errNotFound when it does not
// exist, skipped (with the reason the card shows) when it is not read.
type readFile func(path string) (fileText, error)

// diffWriter is a diff being written, and the budget it spends.
type diffWriter struct {
	strings.Builder
	budget *budget
}

// contextOf is the diff of an edit call, computed here where the files
// are, within the budget that ends at deadline; nil for any other tool, or
// when no diff can be made. The diff is context for the reviewer, never
// what is approved: any failure leaves it out and the call is asked about
// all the same. The API key is taken out of it, as out of every message.
//
// It also returns the pre-images: each file read, with the SHA-256 of what
// was read ("" for a file that did not exist).
func contextOf(in Input, files Files, deadline time.Time, key string) (*client.CallContext, map[string]string) {
	r := newReader(in.Cwd, files, newBudget(deadline))
	d, over := tryDiff(in.ToolName, in.ToolInput, in.Cwd, r.read, r.budget)
	pre := r.preimages
	if over {
		pre = nil
		// The diff from the arguments alone, each file under the note.
		skip := func(string) (fileText, error) { return fileText{}, skipped{whyBudget} }
		d, _ = tryDiff(in.ToolName, in.ToolInput, in.Cwd, skip, newBudget(time.Now().Add(maxDiffTime)))
	}
	if d == "" {
		return nil, pre
	}
	if len(key) >= 8 {
		d = strings.ReplaceAll(d, key, "[API key]")
	}
	return &client.CallContext{Diff: d}, pre
}

// tryDiff is editDiff, and whether it ran out of its budget (then "").
func tryDiff(tool string, input []byte, cwd string, read readFile, b *budget) (d string, over bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(overBudget); !ok {
				panic(r)
			}
			d, over = "", true
		}
	}()
	return editDiff(tool, input, cwd, read, b), false
}

// editDiff is the unified diff of one edit tool's call: Claude Code's Edit,
// MultiEdit, Write and NotebookEdit, Codex's apply_patch. A file that
// cannot be read is diffed from the arguments alone, under the note
// approval.UnreadNote (and the reason). "" for other tools and unreadable
// arguments. Past its budget it panics with overBudget (see tryDiff).
func editDiff(tool string, input []byte, cwd string, read readFile, bud *budget) string {
	b := &diffWriter{budget: bud}
	var err error
	switch tool {
	case "Edit":
		err = diffEdit(b, input, cwd, read)
	case "MultiEdit":
		err = diffMultiEdit(b, input, cwd, read)
	case "Write":
		err = diffWrite(b, input, cwd, read)
	case "NotebookEdit":
		err = diffNotebook(b, input, cwd, read)
	case "apply_patch":
		err = diffApplyPatch(b, input, cwd, read)
	default:
		return ""
	}
	if err != nil {
		return ""
	}
	return sendable(b.String())
}

// unreadNotes are the header lines of a file diffed from the arguments
// alone because err kept it unread (or it does not exist), and the link
// note when the path is a link.
func unreadNotes(ft fileText, err error) []string {
	notes := linkNotes(ft)
	var s skipped
	if errors.As(err, &s) {
		return append(notes, approval.UnreadNote+": "+s.why)
	}
	return append(notes, approval.UnreadNote)
}

// linkNotes are the notes of a file that was read: its link target, and
// the SHA-256 of what was read (the pre-image the person approves).
func linkNotes(ft fileText) []string {
	var notes []string
	if ft.link != "" {
		notes = append(notes, approval.LinkNote+ft.link)
	}
	if ft.sha256 != "" {
		notes = append(notes, approval.PreImageNote+ft.sha256)
	}
	return notes
}

// sendable makes a diff fit what the check accepts: valid UTF-8, no NUL,
// within approval.MaxContextDiffBytes ("" past it: the card then shows the
// arguments alone).
func sendable(d string) string {
	d = strings.ReplaceAll(strings.ToValidUTF8(d, "\uFFFD"), "\x00", "\u2400")
	if len(d) > approval.MaxContextDiffBytes || !utf8.ValidString(d) {
		return ""
	}
	return d
}

// abs resolves a path the agent named against its working directory.
func abs(path, cwd string) string {
	if path == "" || filepath.IsAbs(path) || cwd == "" {
		return path
	}
	return filepath.Join(cwd, path)
}

// diffEdit: Edit replaces old_string with new_string in file_path.
func diffEdit(b *diffWriter, input []byte, cwd string, read readFile) error {
	var in struct {
		FilePath string `json:"file_path"`
		editArgs
	}
	if err := json.Unmarshal(input, &in); err != nil || in.FilePath == "" {
		return errors.New("not an Edit")
	}
	return diffEdits(b, abs(in.FilePath, cwd), []editArgs{in.editArgs}, read)
}

// diffMultiEdit: MultiEdit applies edits[] to file_path in order.
func diffMultiEdit(b *diffWriter, input []byte, cwd string, read readFile) error {
	var in struct {
		FilePath string     `json:"file_path"`
		Edits    []editArgs `json:"edits"`
	}
	if err := json.Unmarshal(input, &in); err != nil || in.FilePath == "" || len(in.Edits) == 0 {
		return errors.New("not a MultiEdit")
	}
	return diffEdits(b, abs(in.FilePath, cwd), in.Edits, read)
}

// diffEdits diffs the file before and after the edits; when the file
// cannot be read, or an edit does not apply to it, each edit's old text
// against its new text, under the note that says which.
func diffEdits(b *diffWriter, path string, edits []editArgs, read readFile) error {
	cur, err := read(path)
	if err == nil {
		next, ok := applyEdits(cur.text, edits, path, b.budget)
		if ok {
			unifiedFile(b, path, path, cur.text, next, linkNotes(cur)...)
			return nil
		}
	}
	if errors.Is(err, errNotFound) && len(edits) == 1 && edits[0].OldString == "" {
		unifiedFile(b, "", path, "", edits[0].NewString) // Edit creates a file with an empty old_string
		return nil
	}
	notes := unreadNotes(cur, err)
	if err == nil {
		notes = append(linkNotes(cur), approval.NotAppliedNote)
	}
	for _, e := range edits {
		unifiedFile(b, path, path, withNewline(e.OldString), withNewline(e.NewString), notes...)
	}
	return nil
}

// withNewline ends a fragment with a line break, so that a fragment that
// is part of a line is not shown as the end of the file.
func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// diffWrite: Write replaces file_path's whole content (or creates it).
func diffWrite(b *diffWriter, input []byte, cwd string, read readFile) error {
	var in struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
	}
	if err := json.Unmarshal(input, &in); err != nil || in.FilePath == "" {
		return errors.New("not a Write")
	}
	path := abs(in.FilePath, cwd)
	cur, err := read(path)
	switch {
	case errors.Is(err, errNotFound):
		unifiedFile(b, "", path, "", in.Content)
	case err != nil:
		unifiedFile(b, path, path, "", in.Content, unreadNotes(cur, err)...)
	default:
		unifiedFile(b, path, path, cur.text, in.Content, linkNotes(cur)...)
	}
	return nil
}

// diffNotebook: NotebookEdit replaces, inserts or deletes one cell of a
// Jupyter notebook; the diff is of that cell's source (best effort: an
// unreadable notebook or an unknown cell gives the new source alone).
func diffNotebook(b *diffWriter, input []byte, cwd string, read readFile) error {
	var in struct {
		Path     string `json:"notebook_path"`
		CellID   string `json:"cell_id"`
		Source   string `json:"new_source"`
		EditMode string `json:"edit_mode"`
	}
	if err := json.Unmarshal(input, &in); err != nil || in.Path == "" {
		return errors.New("not a NotebookEdit")
	}
	path := abs(in.Path, cwd)
	label := path + " (cell " + in.CellID + ")"
	if in.CellID == "" {
		label = path + " (new cell)"
	}
	old, found := "", false
	ft, err := read(path)
	if err == nil && in.CellID != "" {
		old, found = cellSource(ft.text, in.CellID)
	}
	switch {
	case in.EditMode == "insert":
		unifiedFile(b, label, label, "", withNewline(in.Source), linkNotes(ft)...)
	case in.EditMode == "delete" && found:
		unifiedFile(b, label, label, withNewline(old), "", linkNotes(ft)...)
	case found:
		unifiedFile(b, label, label, withNewline(old), withNewline(in.Source), linkNotes(ft)...)
	default:
		unifiedFile(b, label, label, "", withNewline(in.Source), unreadNotes(ft, err)...)
	}
	return nil
}

// cellSource is the source of the notebook cell with id.
func cellSource(notebook, id string) (string, bool) {
	var nb struct {
		Cells []struct {
			ID     string          `json:"id"`
			Source json.RawMessage `json:"source"`
		} `json:"cells"`
	}
	if json.Unmarshal([]byte(notebook), &nb) != nil {
		return "", false
	}
	for _, c := range nb.Cells {
		if c.ID != id {
			continue
		}
		var lines []string
		if json.Unmarshal(c.Source, &lines) == nil {
			return strings.Join(lines, ""), true
		}
		var s string
		return s, json.Unmarshal(c.Source, &s) == nil
	}
	return "", false
}
