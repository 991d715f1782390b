package hook

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
)

func TestUnifiedFile(t *testing.T) {
	nums := func(from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			b.WriteString("l" + itoa(i) + "\n")
		}
		return b.String()
	}
	cases := []struct {
		name, old, new, want string
	}{
		{"Same", "a\nb\n", "a\nb\n", ""},
		{"InsertTop", "a\nb\n", "x\na\nb\n", "@@ -1,2 +1,3 @@\n+x\n a\n b\n"},
		{"AppendEnd", "a\n", "a\nb\n", "@@ -1,1 +1,2 @@\n a\n+b\n"},
		{"ChangeMiddle", "a\nb\nc\n", "a\nB\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"DeleteAll", "a\nb\n", "", "@@ -1,2 +0,0 @@\n-a\n-b\n"},
		{"NewFile", "", "a\n", "@@ -0,0 +1,1 @@\n+a\n"},
		{"NoNewlineAtEnd", "a\nb", "a\nc", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"NewlineAdded", "a", "a\n", "@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+a\n"},
		{"TwoHunks", nums(1, 20), strings.Replace(strings.Replace(nums(1, 20), "l2\n", "L2\n", 1), "l19\n", "L19\n", 1),
			"@@ -1,5 +1,5 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n@@ -16,5 +16,5 @@\n l16\n l17\n l18\n-l19\n+L19\n l20\n"},
		{"CloseChangesOneHunk", nums(1, 10), strings.Replace(strings.Replace(nums(1, 10), "l3\n", "L3\n", 1), "l8\n", "L8\n", 1),
			"@@ -1,10 +1,10 @@\n l1\n l2\n-l3\n+L3\n l4\n l5\n l6\n l7\n-l8\n+L8\n l9\n l10\n"},
		{"RemovalsBeforeAdditions", "a\nb\nc\n", "a\nx\ny\nc\n", "@@ -1,3 +1,4 @@\n a\n-b\n+x\n+y\n c\n"},
		{"KeepsCommonLineInside", "a\nb\nc\nd\n", "a\nx\nc\ny\n", "@@ -1,4 +1,4 @@\n a\n-b\n+x\n c\n-d\n+y\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b diffWriter
			unifiedFile(&b, "f", "f", c.old, c.new)
			got := b.String()
			want := ""
			if c.want != "" {
				want = "--- f\n+++ f\n" + c.want
			}
			if got != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
			if got != "" {
				if _, err := approval.ParseDiff(got); err != nil {
					t.Fatalf("does not parse: %v", err)
				}
			}
		})
	}
}

// A changed middle too large for the table is shown whole: every old line
// removed, every new line added, still a diff that parses.
func TestUnifiedFileBounded(t *testing.T) {
	var a, b strings.Builder
	for i := 0; i < 2100; i++ {
		a.WriteString("old " + itoa(i) + "\n")
		b.WriteString("new " + itoa(i) + "\n")
	}
	var out diffWriter
	unifiedFile(&out, "f", "f", "head\n"+a.String()+"tail\n", "head\n"+b.String()+"tail\n")
	d, err := approval.ParseDiff(out.String())
	if err != nil {
		t.Fatal(err)
	}
	var rem, add int
	for _, l := range d.Files[0].Hunks[0].Lines {
		switch l.Kind {
		case approval.DiffRemove:
			rem++
		case approval.DiffAdd:
			add++
		}
	}
	if rem != 2100 || add != 2100 {
		t.Fatalf("removed %d added %d", rem, add)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
