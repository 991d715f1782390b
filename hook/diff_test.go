package hook

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
)

// diffOf runs editDiff over files on disk and parses what it made.
func diffOf(t *testing.T, tool, input, cwd string) (string, approval.Diff) {
	t.Helper()
	d := editDiff(tool, []byte(input), cwd, newReader(cwd, Files{}, nil).read, nil)
	if d == "" {
		t.Fatalf("%s: no diff", tool)
	}
	parsed, err := approval.ParseDiff(d)
	if err != nil {
		t.Fatalf("%s: the diff does not parse: %v\n%s", tool, err, d)
	}
	return d, parsed
}

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func jsonQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

func TestEditDiff(t *testing.T) {
	dir := t.TempDir()
	body := "package main\n\nfunc a() {}\n\nfunc b() {\n\treturn\n}\n\nfunc c() {}\n\nfunc d() {}\n"
	path := write(t, dir, "main.go", body)

	t.Run("Edit", func(t *testing.T) {
		_, d := diffOf(t, "Edit", `{"file_path":`+jsonQuote(path)+`,"old_string":"\treturn\n","new_string":"\tpanic(1)\n"}`, dir)
		f := d.Files[0]
		if f.Path() != path || f.Unread || f.IsNew() {
			t.Fatalf("file %+v", f)
		}
		var got []string
		for _, l := range f.Hunks[0].Lines {
			if l.Kind != approval.DiffContext {
				got = append(got, string(l.Kind)+":"+l.Text+":"+strings.TrimSpace(fmtN(l.Old, l.New)))
			}
		}
		want := []string{"remove:\treturn:6 0", "add:\tpanic(1):0 6"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
	t.Run("EditRelativePath", func(t *testing.T) {
		_, d := diffOf(t, "Edit", `{"file_path":"main.go","old_string":"func d() {}","new_string":"func e() {}"}`, dir)
		if d.Files[0].Path() != path || d.Files[0].Unread {
			t.Fatalf("file %+v", d.Files[0])
		}
	})
	t.Run("MultiEdit", func(t *testing.T) {
		_, d := diffOf(t, "MultiEdit", `{"file_path":`+jsonQuote(path)+`,"edits":[{"old_string":"func a() {}","new_string":"func a2() {}"},{"old_string":"func d() {}","new_string":"func d2() {}"}]}`, dir)
		adds := 0
		for _, h := range d.Files[0].Hunks {
			for _, l := range h.Lines {
				if l.Kind == approval.DiffAdd {
					adds++
					if l.Text != "func a2() {}" && l.Text != "func d2() {}" {
						t.Fatalf("added %q", l.Text)
					}
				}
			}
		}
		if adds != 2 || d.Files[0].Unread {
			t.Fatalf("adds %d, %+v", adds, d.Files[0])
		}
	})
	t.Run("WriteOverExisting", func(t *testing.T) {
		p := write(t, dir, "notes.txt", "one\ntwo\nthree\n")
		_, d := diffOf(t, "Write", `{"file_path":`+jsonQuote(p)+`,"content":"one\nTWO\nthree\nfour\n"}`, dir)
		var removed, added []string
		for _, l := range d.Files[0].Hunks[0].Lines {
			switch l.Kind {
			case approval.DiffRemove:
				removed = append(removed, l.Text)
			case approval.DiffAdd:
				added = append(added, l.Text)
			}
		}
		if strings.Join(removed, ",") != "two" || strings.Join(added, ",") != "TWO,four" || d.Files[0].IsNew() {
			t.Fatalf("removed %q added %q", removed, added)
		}
	})
	t.Run("WriteNewFile", func(t *testing.T) {
		p := filepath.Join(dir, "sub", "new.txt")
		_, d := diffOf(t, "Write", `{"file_path":`+jsonQuote(p)+`,"content":"hello\nworld"}`, dir)
		f := d.Files[0]
		if !f.IsNew() || f.Path() != p || len(f.Hunks[0].Lines) != 3 || f.Hunks[0].Lines[2].Kind != approval.DiffNoEOL {
			t.Fatalf("file %+v", f)
		}
	})
	t.Run("Unreadable", func(t *testing.T) {
		p := write(t, dir, "secret.txt", "a\nb\n")
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := os.ReadFile(p); err == nil {
			t.Skip("running as root: a mode-0 file is still readable")
		}
		_, d := diffOf(t, "Edit", `{"file_path":`+jsonQuote(p)+`,"old_string":"a","new_string":"A"}`, dir)
		if !d.Files[0].Unread {
			t.Fatalf("not marked unread: %+v", d.Files[0])
		}
	})
	t.Run("BinaryIsUnread", func(t *testing.T) {
		p := write(t, dir, "blob.bin", "a\x00b\n")
		_, d := diffOf(t, "Write", `{"file_path":`+jsonQuote(p)+`,"content":"text\n"}`, dir)
		if !d.Files[0].Unread {
			t.Fatalf("not marked unread: %+v", d.Files[0])
		}
	})
	t.Run("TooLargeIsUnread", func(t *testing.T) {
		p := write(t, dir, "big.txt", strings.Repeat("x\n", maxReadBytes/2+1))
		_, d := diffOf(t, "Edit", `{"file_path":`+jsonQuote(p)+`,"old_string":"x","new_string":"y"}`, dir)
		if !d.Files[0].Unread {
			t.Fatalf("not marked unread: %+v", d.Files[0])
		}
	})
	t.Run("EditNotFoundInFile", func(t *testing.T) {
		// Read, and the edit does not apply: said so, not "could not read".
		_, d := diffOf(t, "Edit", `{"file_path":`+jsonQuote(path)+`,"old_string":"nowhere","new_string":"x"}`, dir)
		if !d.Files[0].NotApplied || d.Files[0].Unread {
			t.Fatalf("not marked as not applying: %+v", d.Files[0])
		}
	})
	t.Run("NotebookEdit", func(t *testing.T) {
		nb := write(t, dir, "n.ipynb", `{"cells":[{"id":"c1","cell_type":"code","source":["x = 1\n","print(x)"]}]}`)
		_, d := diffOf(t, "NotebookEdit", `{"notebook_path":`+jsonQuote(nb)+`,"cell_id":"c1","new_source":"x = 2\nprint(x)","edit_mode":"replace"}`, dir)
		f := d.Files[0]
		if f.Unread || f.Path() != nb+" (cell c1)" || f.Hunks[0].Lines[0].Text != "x = 1" || f.Hunks[0].Lines[1].Text != "x = 2" {
			t.Fatalf("notebook %+v", f)
		}
		_, d = diffOf(t, "NotebookEdit", `{"notebook_path":`+jsonQuote(nb)+`,"cell_id":"nope","new_source":"y"}`, dir)
		if !d.Files[0].Unread {
			t.Fatalf("an unknown cell is not marked: %+v", d.Files[0])
		}
	})
	t.Run("OtherTool", func(t *testing.T) {
		if d := editDiff("Bash", []byte(`{"command":"ls"}`), dir, newReader(dir, Files{}, nil).read, nil); d != "" {
			t.Fatalf("diff for Bash: %q", d)
		}
	})
}

func fmtN(a, b int) string { return strconv.Itoa(a) + " " + strconv.Itoa(b) }

func TestApplyPatchDiff(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "app.py", "def greet():\n    print('hi')\n\n\ndef main():\n    greet()\n")
	write(t, dir, "old.txt", "bye\n")
	patch := "*** Begin Patch\n*** Update File: app.py\n@@ def greet():\n-    print('hi')\n+    print('hello')\n*** Add File: docs/readme.md\n+# Title\n+text\n*** Delete File: old.txt\n*** End Patch"
	for _, key := range []string{"command", "patch", "input"} {
		t.Run(key, func(t *testing.T) {
			_, d := diffOf(t, "apply_patch", `{"`+key+`":`+jsonQuote(patch)+`}`, dir)
			if len(d.Files) != 3 {
				t.Fatalf("%d files", len(d.Files))
			}
			up, add, del := d.Files[0], d.Files[1], d.Files[2]
			if up.Path() != filepath.Join(dir, "app.py") || up.Unread || up.IsNew() {
				t.Fatalf("update %+v", up)
			}
			var got []string
			for _, l := range up.Hunks[0].Lines {
				if l.Kind != approval.DiffContext {
					got = append(got, string(l.Kind)+" "+fmtN(l.Old, l.New)+" "+l.Text)
				}
			}
			if strings.Join(got, "|") != "remove 2 0     print('hi')|add 0 2     print('hello')" {
				t.Fatalf("update lines %q", got)
			}
			if !add.IsNew() || add.Path() != filepath.Join(dir, "docs/readme.md") || len(add.Hunks[0].Lines) != 2 {
				t.Fatalf("add %+v", add)
			}
			if !del.IsDeleted() || del.Hunks[0].Lines[0].Text != "bye" {
				t.Fatalf("delete %+v", del)
			}
		})
	}
	t.Run("UpdateOfMissingFile", func(t *testing.T) {
		p := "*** Begin Patch\n*** Update File: missing.go\n@@\n-a\n+b\n*** End Patch\n"
		_, d := diffOf(t, "apply_patch", `{"command":`+jsonQuote(p)+`}`, dir)
		if !d.Files[0].NotApplied || d.Files[0].Hunks[0].Lines[0].Text != "a" {
			t.Fatalf("file %+v", d.Files[0])
		}
	})
	t.Run("NotAPatch", func(t *testing.T) {
		if d := editDiff("apply_patch", []byte(`{"command":"ls"}`), dir, newReader(dir, Files{}, nil).read, nil); d != "" {
			t.Fatalf("diff %q", d)
		}
	})
}
