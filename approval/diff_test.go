package approval

import (
	"strings"
	"testing"
)

// TestParseDiff: what parses, with which files and line numbers, and what
// is refused (and then shown raw).
func TestParseDiff(t *testing.T) {
	type line = string // "kind old new text"
	fmtLine := func(l DiffLine) string {
		return string(l.Kind) + " " + itoaT(l.Old) + " " + itoaT(l.New) + " " + l.Text
	}
	cases := []struct {
		name  string
		in    string
		paths [][2]string // old, new per file
		lines []line      // every line of every hunk
		err   bool
	}{
		{name: "Simple", in: "--- a.txt\n+++ a.txt\n@@ -3,3 +3,3 @@\n one\n-two\n+TWO\n three\n",
			paths: [][2]string{{"a.txt", "a.txt"}},
			lines: []line{"context 3 3 one", "remove 4 0 two", "add 0 4 TWO", "context 5 5 three"}},
		{name: "GitPrefixes", in: "diff --git a/x.go b/x.go\nindex 1..2 100644\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n",
			paths: [][2]string{{"x.go", "x.go"}}, lines: []line{"remove 1 0 a", "add 0 1 b"}},
		{name: "LoneAPrefixKept", in: "--- a/x.go\n+++ c/x.go\n@@ -1 +1 @@\n-a\n+b\n",
			paths: [][2]string{{"a/x.go", "c/x.go"}}, lines: []line{"remove 1 0 a", "add 0 1 b"}},
		{name: "NewFile", in: "--- /dev/null\n+++ /srv/new.txt\t2026-01-01\n@@ -0,0 +1,2 @@\n+hello\n+world\n\\ No newline at end of file\n",
			paths: [][2]string{{"", "/srv/new.txt"}}, lines: []line{"add 0 1 hello", "add 0 2 world", "noeol 0 0 No newline at end of file"}},
		{name: "Deleted", in: "--- old.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-bye\n",
			paths: [][2]string{{"old.txt", ""}}, lines: []line{"remove 1 0 bye"}},
		{name: "InsertAfterLine5", in: "--- f\n+++ f\n@@ -5,0 +6,1 @@\n+x\n",
			paths: [][2]string{{"f", "f"}}, lines: []line{"add 0 6 x"}},
		{name: "EmptyContextLine", in: "--- f\n+++ f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n",
			paths: [][2]string{{"f", "f"}}, lines: []line{"context 1 1 a", "context 2 2 ", "remove 3 0 b", "add 0 3 c"}},
		{name: "TwoFilesTwoHunks", in: "--- f\n+++ f\n@@ -1 +1 @@\n-a\n+b\n@@ -10 +10 @@\n-c\n+d\n--- g\n+++ g\n@@ -1 +1 @@\n-e\n+f\n",
			paths: [][2]string{{"f", "f"}, {"g", "g"}},
			lines: []line{"remove 1 0 a", "add 0 1 b", "remove 10 0 c", "add 0 10 d", "remove 1 0 e", "add 0 1 f"}},
		{name: "UnreadNote", in: UnreadNote + "\n--- f\n+++ f\n@@ -1 +1 @@\n-a\n+b\n",
			paths: [][2]string{{"f", "f"}}, lines: []line{"remove 1 0 a", "add 0 1 b"}},
		{name: "GitRename", in: "diff --git a/old.go b/new.go\nsimilarity index 100%\nrename from old.go\nrename to new.go\n",
			paths: [][2]string{{"old.go", "new.go"}}},
		{name: "GitDeletedNoHunks", in: "diff --git a/x b/x\ndeleted file mode 100644\ndiff --git a/y b/y\nnew file mode 100644\n",
			paths: [][2]string{{"x", ""}, {"", "y"}}},
		{name: "CRLF", in: "--- f\r\n+++ f\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n", paths: [][2]string{{"f", "f"}}, lines: []line{"remove 1 0 a", "add 0 1 b"}},
		{name: "Empty", in: "", err: true},
		{name: "Prose", in: "I changed the file to be better.\n", err: true},
		{name: "NoPlus", in: "--- f\n@@ -1 +1 @@\n-a\n+b\n", err: true},
		{name: "NoHunk", in: "--- f\n+++ f\n", err: true},
		{name: "BadHeader", in: "--- f\n+++ f\n@@ -x +1 @@\n+a\n", err: true},
		{name: "HunkTooShort", in: "--- f\n+++ f\n@@ -1,2 +1,2 @@\n-a\n+b\n", err: true},
		{name: "HunkTooLong", in: "--- f\n+++ f\n@@ -1 +1 @@\n-a\n+b\n+c\n", err: true},
		{name: "StrayLineAfterHunk", in: "--- f\n+++ f\n@@ -1 +1 @@\n-a\n+b\nextra\n", err: true},
		{name: "UnknownMark", in: "--- f\n+++ f\n@@ -1 +1 @@\n*a\n+b\n", err: true},
		{name: "BothDevNull", in: "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", err: true},
		{name: "NoEOLFirst", in: "--- f\n+++ f\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n", err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseDiff(c.in)
			if c.err {
				if err == nil {
					t.Fatalf("parsed: %+v", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var paths [][2]string
			var got []string
			for _, f := range d.Files {
				paths = append(paths, [2]string{f.OldPath, f.NewPath})
				for _, h := range f.Hunks {
					for _, l := range h.Lines {
						got = append(got, fmtLine(l))
					}
				}
			}
			if strings.Join(got, "|") != strings.Join(c.lines, "|") {
				t.Errorf("lines\n got %q\nwant %q", got, c.lines)
			}
			if len(paths) != len(c.paths) {
				t.Fatalf("paths %q, want %q", paths, c.paths)
			}
			for i := range paths {
				if paths[i] != c.paths[i] {
					t.Errorf("paths %q, want %q", paths, c.paths)
				}
			}
			if c.name == "UnreadNote" && !d.Files[0].Unread {
				t.Error("the note is not read")
			}
		})
	}
}

func itoaT(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestPreviewDiff: a small diff is kept whole; past the limits unchanged
// context is folded and every changed line stays; a diff that does not
// parse keeps its head and its tail.
func TestPreviewDiff(t *testing.T) {
	if PreviewDiff("") != nil {
		t.Fatal("a preview of nothing")
	}
	small := PreviewDiff("--- f\n+++ f\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n")
	if !small.Parsed || small.Folded || len(small.Files[0].Hunks[0].Lines) != 4 {
		t.Fatalf("small %+v", small)
	}
	// 400 unchanged lines around one change, over 4,096 characters.
	var b strings.Builder
	b.WriteString("--- f\n+++ f\n@@ -1,401 +1,401 @@\n")
	for i := 0; i < 200; i++ {
		b.WriteString(" unchanged line number padding\n")
	}
	b.WriteString("-old\n+new\n")
	for i := 0; i < 200; i++ {
		b.WriteString(" unchanged line number padding\n")
	}
	big := PreviewDiff(b.String())
	if !big.Parsed || !big.Folded {
		t.Fatalf("big not folded: %+v", big.Folded)
	}
	var kinds []string
	for _, l := range big.Files[0].Hunks[0].Lines {
		k := string(l.Kind)
		if l.Kind == DiffFold {
			k += itoaT(l.Folded)
		}
		kinds = append(kinds, k)
	}
	want := "fold198|context|context|remove|add|context|context|fold198"
	if strings.Join(kinds, "|") != want {
		t.Fatalf("folded to %q, want %q", kinds, want)
	}
	if got := big.Files[0].Hunks[0].Lines[3]; got.Old != 201 || got.Text != "old" {
		t.Fatalf("the removed line lost its number: %+v", got)
	}
	raw := PreviewDiff(strings.Repeat("x", DiffCardChars) + "&& rm -rf /srv/app/data/*")
	if raw.Parsed || raw.RawHidden == 0 || !strings.HasSuffix(raw.RawTail, "&& rm -rf /srv/app/data/*") || raw.Problem == "" {
		t.Fatalf("raw: parsed %v hidden %d tail %q", raw.Parsed, raw.RawHidden, raw.RawTail[len(raw.RawTail)-30:])
	}
	long := PreviewDiff("--- f\n+++ f\n@@ -1 +1 @@\n-a\n+" + strings.Repeat("y", 5000) + "END\n")
	l := long.Files[0].Hunks[0].Lines[1]
	if l.Cut == 0 || !strings.HasSuffix(l.Tail, "END") || len([]rune(l.Text))+len([]rune(l.Tail))+l.Cut != 5003 {
		t.Fatalf("long line: cut %d tail %q", l.Cut, l.Tail[len(l.Tail)-3:])
	}
}
