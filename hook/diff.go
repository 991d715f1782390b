package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
// exist, an error when it cannot be read, is too large or is binary.
type readFile func(path string) (string, error)

// readLocal reads path on this machine, within maxReadBytes.
func readLocal(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errNotFound
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() || st.Size() > maxReadBytes {
		return "", fmt.Errorf("%s is not a regular file within %d bytes", path, maxReadBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxReadBytes || bytes.IndexByte(b, 0) >= 0 {
		return "", fmt.Errorf("%s is too large or a binary file", path)
	}
	return string(b), nil
}

// contextOf is the diff of an edit call, computed here where the files
// are; nil for any other tool, or when no diff can be made. The diff is
// context for the reviewer, never what is approved: any failure leaves it
// out and the call is asked about all the same.
func contextOf(in Input) *client.CallContext {
	d := editDiff(in.ToolName, in.ToolInput, in.Cwd, readLocal)
	if d == "" {
		return nil
	}
	return &client.CallContext{Diff: d}
}

// editDiff is the unified diff of one edit tool's call: Claude Code's Edit,
// MultiEdit, Write and NotebookEdit, Codex's apply_patch. A file that
// cannot be read is diffed from the arguments alone, under the note
// approval.UnreadNote. "" for other tools and unreadable arguments.
func editDiff(tool string, input []byte, cwd string, read readFile) string {
	var b strings.Builder
	var err error
	switch tool {
	case "Edit":
		err = diffEdit(&b, input, cwd, read)
	case "MultiEdit":
		err = diffMultiEdit(&b, input, cwd, read)
	case "Write":
		err = diffWrite(&b, input, cwd, read)
	case "NotebookEdit":
		err = diffNotebook(&b, input, cwd, read)
	case "apply_patch":
		err = diffApplyPatch(&b, input, cwd, read)
	default:
		return ""
	}
	if err != nil {
		return ""
	}
	return sendable(b.String())
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

type editArgs struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// diffEdit: Edit replaces old_string with new_string in file_path.
func diffEdit(b *strings.Builder, input []byte, cwd string, read readFile) error {
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
func diffMultiEdit(b *strings.Builder, input []byte, cwd string, read readFile) error {
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
// cannot be read or an edit does not apply to it, each edit's old text
// against its new text, under the note.
func diffEdits(b *strings.Builder, path string, edits []editArgs, read readFile) error {
	cur, err := read(path)
	if err == nil {
		next, ok := applyEdits(cur, edits)
		if ok {
			unifiedFile(b, path, path, cur, next)
			return nil
		}
	}
	if errors.Is(err, errNotFound) && len(edits) == 1 && edits[0].OldString == "" {
		unifiedFile(b, "", path, "", edits[0].NewString) // Edit creates a file with an empty old_string
		return nil
	}
	for _, e := range edits {
		unifiedFile(b, path, path, withNewline(e.OldString), withNewline(e.NewString), approval.UnreadNote)
	}
	return nil
}

// applyEdits applies Claude Code's edits as it does: each old_string must
// be found (once, unless replace_all).
func applyEdits(s string, edits []editArgs) (string, bool) {
	for _, e := range edits {
		n := strings.Count(s, e.OldString)
		if e.OldString == "" || n == 0 || (n > 1 && !e.ReplaceAll) {
			return "", false
		}
		s = strings.ReplaceAll(s, e.OldString, e.NewString)
	}
	return s, true
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
func diffWrite(b *strings.Builder, input []byte, cwd string, read readFile) error {
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
		unifiedFile(b, path, path, "", in.Content, approval.UnreadNote)
	default:
		unifiedFile(b, path, path, cur, in.Content)
	}
	return nil
}

// diffNotebook: NotebookEdit replaces, inserts or deletes one cell of a
// Jupyter notebook; the diff is of that cell's source (best effort: an
// unreadable notebook or an unknown cell gives the new source alone).
func diffNotebook(b *strings.Builder, input []byte, cwd string, read readFile) error {
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
	if text, err := read(path); err == nil && in.CellID != "" {
		old, found = cellSource(text, in.CellID)
	}
	switch {
	case in.EditMode == "insert":
		unifiedFile(b, label, label, "", withNewline(in.Source))
	case in.EditMode == "delete" && found:
		unifiedFile(b, label, label, withNewline(old), "")
	case found:
		unifiedFile(b, label, label, withNewline(old), withNewline(in.Source))
	default:
		unifiedFile(b, label, label, "", withNewline(in.Source), approval.UnreadNote)
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
