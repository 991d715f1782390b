package approval

import (
	"encoding/json"
	"strings"
)

// EditPair is one replacement an edit tool's call asks for: the text it
// replaces and the text it puts there, each whole or folded as the
// argument's preview keeps it.
type EditPair struct {
	// Path is the file the edit names ("" when the call names none).
	Path string
	// OldKey and NewKey are the arguments' names as sent ("old_string").
	OldKey, NewKey string
	Old, New       PreviewLine
}

// editKeys are the argument names edit tools give the replaced text and
// its replacement: Claude Code's Edit and MultiEdit, and the common
// spellings of other tools.
var editKeys = [][2]string{{"old_string", "new_string"}, {"old_str", "new_str"}, {"old_text", "new_text"},
	{"oldText", "newText"}, {"old", "new"}}

// editPathKeys name the file an edit applies to.
var editPathKeys = []string{"file_path", "path", "filePath", "file", "notebook_path"}

// EditPairs are the replacements a call's arguments ask for, each old
// before new, whatever order the model sent the keys in: the card shows
// them so that a reviewer reads what goes before what comes, then the
// arguments as sent. A MultiEdit's list of edits gives one pair each when
// its preview holds it whole. None for a call that is not an edit.
func EditPairs(p ArgumentPreview) []EditPair {
	if !p.Parsed {
		return nil
	}
	byKey := make(map[string]PreviewLine, len(p.Lines))
	for _, l := range p.Lines {
		if !l.KeyShortened {
			byKey[l.Key] = l
		}
	}
	path := ""
	for _, k := range editPathKeys {
		if l, ok := byKey[k]; ok && !l.Shortened {
			path = l.Value
			break
		}
	}
	var out []EditPair
	for _, k := range editKeys {
		o, okOld := byKey[k[0]]
		n, okNew := byKey[k[1]]
		if okOld && okNew {
			out = append(out, EditPair{Path: path, OldKey: k[0], NewKey: k[1], Old: o, New: n})
		}
	}
	if l, ok := byKey["edits"]; ok && !l.Shortened {
		out = append(out, listedEdits(path, l.Value)...)
	}
	return out
}

// listedEdits are the pairs of a list of edits given as JSON (MultiEdit's
// "edits"); none when it is not such a list.
func listedEdits(path, value string) []EditPair {
	var list []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(value), &list); err != nil {
		return nil
	}
	var out []EditPair
	for _, e := range list {
		for _, k := range editKeys {
			o, n := stringOf(e[k[0]]), stringOf(e[k[1]])
			if o != nil && n != nil {
				out = append(out, EditPair{Path: path, OldKey: k[0], NewKey: k[1],
					Old: PreviewLine{Key: k[0], Value: *o, Length: len([]rune(*o)), Hidden: HasHidden(*o, MultiLine)},
					New: PreviewLine{Key: k[1], Value: *n, Length: len([]rune(*n)), Hidden: HasHidden(*n, MultiLine)}})
				break
			}
		}
	}
	return out
}

// stringOf is a JSON string's value, or nil when raw is not a string.
func stringOf(raw json.RawMessage) *string {
	if !strings.HasPrefix(strings.TrimSpace(string(raw)), `"`) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return &s
}
