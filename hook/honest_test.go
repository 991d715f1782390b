package hook

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The text an edit leaves, as the agent applies it: what the card's diff
// is computed from.
func TestEditsApplyAsClaudeCodeDoes(t *testing.T) {
	cases := []struct {
		name, file string
		edits      []editArgs
		want       string // "" : does not apply
	}{
		{"Exact", "a = 1\nb = 2\n", []editArgs{{OldString: "b = 2", NewString: "b = 3"}}, "a = 1\nb = 3\n"},
		{"CurlyQuotesInFile", "say(\u201chello\u201d)\nit\u2019s\n", []editArgs{{OldString: `say("hello")`, NewString: `say("bye")`}},
			"say(\u201cbye\u201d)\nit\u2019s\n"},
		{"CurlySingleContraction", "it\u2019s \u2018x\u2019\n", []editArgs{{OldString: "it's 'x'", NewString: "it's 'y' don't"}},
			"it\u2019s \u2018y\u2019 don\u2019t\n"},
		{"CRLFKept", "one\r\ntwo\r\nthree\r\n", []editArgs{{OldString: "two\n", NewString: "2\nextra\n"}}, "one\r\n2\r\nextra\r\nthree\r\n"},
		{"EmptyNewRemovesTheLine", "keep\ndrop me\nkeep too\n", []editArgs{{OldString: "drop me", NewString: ""}}, "keep\nkeep too\n"},
		{"Escapes", "x = \"\u00e9\"\n", []editArgs{{OldString: `x = "\u00e9"`, NewString: `x = "\u00e8"`}}, "x = \"\u00e8\"\n"},
		{"NotThere", "a\n", []editArgs{{OldString: "zzz", NewString: "y"}}, ""},
		{"TwiceWithoutReplaceAll", "a\na\n", []editArgs{{OldString: "a", NewString: "b"}}, ""},
		{"ReplaceAll", "a\na\n", []editArgs{{OldString: "a", NewString: "b", ReplaceAll: true}}, "b\nb\n"},
		{"InsideAnEarlierNewString", "a\nb\n", []editArgs{{OldString: "a", NewString: "ab"}, {OldString: "b", NewString: "c"}}, ""},
		{"NoChange", "a\n", []editArgs{{OldString: "a", NewString: "a"}}, ""},
		{"EmptyOldOnAFileWithText", "text\n", []editArgs{{OldString: "", NewString: "x"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := applyEdits(c.file, c.edits, "f.py", nil)
			if c.want == "" {
				if ok {
					t.Fatalf("applied: %q", got)
				}
				return
			}
			if !ok || got != c.want {
				t.Fatalf("got %q (%v), want %q", got, ok, c.want)
			}
		})
	}
}

// Codex's patch rules, as the real apply_patch of Codex 0.169.0 showed
// them: untouched lines keep their endings, written lines end as the
// file's first line does, the result ends with a line break, and one
// patch's updates of a file build on each other.
func TestPatchAppliesAsCodexDoes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "win.txt", "one\r\ntwo\r\nthree\r\n")
	write(t, dir, "noeol.txt", "x\ny")
	write(t, dir, "twice.txt", "a\nb\nc\n")
	patch := "*** Begin Patch\n*** Update File: win.txt\n@@\n one\n-two\n+2\n*** Update File: noeol.txt\n@@\n-x\n+X\n" +
		"*** Update File: twice.txt\n@@\n-a\n+A\n*** Update File: twice.txt\n@@\n-A\n+AA\n*** End Patch\n"
	in, _ := json.Marshal(map[string]string{"command": patch})
	d, parsed := diffOf(t, "apply_patch", string(in), dir)
	var changed []string
	for _, f := range parsed.Files {
		for _, h := range f.Hunks {
			for _, l := range h.Lines {
				if l.Kind != "context" {
					changed = append(changed, f.Path()[len(dir)+1:]+" "+string(l.Kind)+" "+strings.TrimSuffix(l.Text, "\r"))
				}
			}
		}
		if f.NotApplied || f.Unread {
			t.Fatalf("%s marked %+v", f.Path(), f)
		}
	}
	want := []string{
		"win.txt remove two", "win.txt add 2", // only the changed line: the CRLF is kept
		"noeol.txt remove x", "noeol.txt remove y", "noeol.txt noeol No newline at end of file", "noeol.txt add X", "noeol.txt add y", // Codex ends the file with a line break
		"twice.txt remove a", "twice.txt add A", "twice.txt remove A", "twice.txt add AA",
	}
	if strings.Join(changed, "|") != strings.Join(want, "|") {
		t.Fatalf("changed lines\n got %q\nwant %q\n%s", changed, want, d)
	}
	t.Run("DoesNotApply", func(t *testing.T) {
		in, _ := json.Marshal(map[string]string{"command": "*** Begin Patch\n*** Update File: twice.txt\n@@\n-not in the file\n+x\n*** End Patch\n"})
		_, parsed := diffOf(t, "apply_patch", string(in), dir)
		if f := parsed.Files[0]; !f.NotApplied || f.Unread {
			t.Fatalf("not said to not apply: %+v", f)
		}
	})
}

// Line endings, as Codex 0.169.0's apply_patch wrote them.
func TestPatchLineEndings(t *testing.T) {
	for _, c := range []struct{ name, file, patch, want string }{
		{"CRLF", "one\r\ntwo\r\nthree\r\n", "@@\n one\n-two\n+2", "one\r\n2\r\nthree\r\n"},
		{"FirstLineCRLF", "a\r\nb\nc\r\n", "@@\n-b\n+B", "a\r\nB\r\nc\r\n"},
		{"FirstLineLF", "a\nb\r\nc\r\n", "@@\n-c\n+C", "a\nb\r\nC\n"},
		{"Tie", "x\ny\r\n", "@@\n-x\n+X", "X\ny\r\n"},
		{"NoFinalNewline", "x\ny", "@@\n-x\n+X", "X\ny\n"},
		{"CRLFGrows", "q\r\n", "@@\n-q\n+Q\n+R", "Q\r\nR\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			files, err := parsePatch("*** Begin Patch\n*** Update File: f\n" + c.patch + "\n*** End Patch\n")
			if err != nil {
				t.Fatal(err)
			}
			got, ok := applyChunks(c.file, files[0].chunks, nil)
			if !ok || got != c.want {
				t.Fatalf("got %q (%v), want %q", got, ok, c.want)
			}
		})
	}
}

// codexBinary is the pinned Codex CLI the e2e tests install, if present.
func codexBinary(t *testing.T) string {
	p, err := filepath.Abs("../e2e/agents/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			// CI installs it: the differential test must run there.
			t.Fatalf("the Codex CLI is missing (npm ci in e2e/agents): %v", err)
		}
		t.Skip("Codex CLI not installed (npm ci in e2e/agents)")
	}
	return p
}

// The same patches applied by Codex's own apply_patch (the codex binary
// run as apply_patch): the file it leaves is the file the card's diff was
// computed for, byte for byte — or both say the patch does not apply.
func TestPatchDifferentialWithCodex(t *testing.T) {
	bin := codexBinary(t)
	dir := t.TempDir()
	applyPatch := filepath.Join(dir, "apply_patch")
	if err := os.Symlink(bin, applyPatch); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, file, patch string }{
		{"CRLF", "one\r\ntwo\r\nthree\r\n", "@@\n one\n-two\n+2"},
		{"FirstLineCRLF", "a\r\nb\nc\r\n", "@@\n-b\n+B"},
		{"FirstLineLF", "a\nb\r\nc\r\n", "@@\n-c\n+C"},
		{"NoFinalNewline", "x\ny", "@@\n-x\n+X"},
		{"TrailingBlanks", "if x:  \n    go()\n", "@@\n-if x:\n+if y:"},
		{"TypographicDash", "a \u2014 b\nc\n", "@@\n-a - b\n+a - B"},
		{"AfterContext", "def f():\n    return 1\ndef g():\n    return 1\n", "@@ def g():\n-    return 1\n+    return 2"},
		{"TwoChunks", "1\n2\n3\n4\n5\n6\n7\n8\n", "@@\n-2\n+two\n@@\n-7\n+seven"},
		{"NotThere", "a\nb\n", "@@\n-zzz\n+y"},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			p := filepath.Join(work, "f.txt")
			if err := os.WriteFile(p, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			patch := "*** Begin Patch\n*** Update File: f.txt\n" + c.patch + "\n*** End Patch\n"
			cmd := exec.Command(applyPatch, patch)
			cmd.Dir = work
			codexErr := cmd.Run()
			landed, _ := os.ReadFile(p)
			files, err := parsePatch(patch)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := applyChunks(c.file, files[0].chunks, nil)
			switch {
			case codexErr != nil && ok:
				t.Fatalf("Codex refused the patch (%v); the hook applied it: %q", codexErr, got)
			case codexErr == nil && !ok:
				t.Fatalf("Codex applied the patch (%q); the hook says it does not apply", landed)
			case codexErr == nil && got != string(landed):
				t.Fatalf("the hook's result %q, Codex's %q", got, landed)
			}
		})
	}
}
