package hook

import (
	"strconv"
	"strings"

	"github.com/countersign/countersign/approval"
)

// maxDiffCells bounds the line diff's table (lines of the old text times
// lines of the new, after their common head and tail are set aside): past
// it, the changed middle is shown as all removed, then all added — still
// every changed line, only not paired up.
const maxDiffCells = 4_000_000

// diffContext is how many unchanged lines a hunk shows around a change, as
// diff -u does.
const diffContext = 3

// splitLines cuts text into lines, each keeping its "\n"; the last one has
// none when the text does not end with a line break.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// op is one step of a line diff: a line of both texts, of the old only
// (removed) or of the new only (added).
type op struct {
	kind byte // ' ', '-' or '+'
	a, b int  // indexes in the old and the new lines (of the side the line is in)
}

// lineDiff is a shortest-edit line diff of a and b: the common head and
// tail set aside, then the longest common subsequence of the rest (a
// table of at most maxDiffCells).
func lineDiff(a, b []string, bud *budget) []op {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var ops []op
	for i := 0; i < head; i++ {
		ops = append(ops, op{' ', i, i})
	}
	ma, mb := a[head:len(a)-tail], b[head:len(b)-tail]
	ops = append(ops, middleDiff(ma, mb, head, bud)...)
	for i := 0; i < tail; i++ {
		ops = append(ops, op{' ', len(a) - tail + i, len(b) - tail + i})
	}
	return ops
}

// middleDiff diffs the changed middle (offset: its first line's index in
// both texts) by the longest common subsequence.
func middleDiff(a, b []string, offset int, bud *budget) []op {
	var ops []op
	if len(a)*len(b) > maxDiffCells || len(a) == 0 || len(b) == 0 {
		for i := range a {
			ops = append(ops, op{'-', offset + i, offset})
		}
		for j := range b {
			ops = append(ops, op{'+', offset + len(a), offset + j})
		}
		return ops
	}
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		bud.spend(len(b))
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, op{' ', offset + i, offset + j})
			i, j = i+1, j+1
		case j == len(b) || (i < len(a) && lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
			// Removals before additions where both keep the subsequence
			// as long: the usual order of a unified diff.
			ops = append(ops, op{'-', offset + i, offset + j})
			i++
		default:
			ops = append(ops, op{'+', offset + i, offset + j})
			j++
		}
	}
	return ops
}

// unifiedFile writes one file of a unified diff of oldText → newText.
// oldPath or newPath "" is /dev/null (a new or a deleted file); header
// lines (a note) go before "---". Nothing is written when nothing changed.
// It spends b's budget, and ends the diff (overBudget) once the diff is
// larger than the check accepts.
func unifiedFile(b *diffWriter, oldPath, newPath string, oldText, newText string, notes ...string) {
	b.budget.spend(len(oldText) + len(newText))
	a, c := splitLines(oldText), splitLines(newText)
	ops := lineDiff(a, c, b.budget)
	changed := false
	for _, o := range ops {
		if o.kind != ' ' {
			changed = true
			break
		}
	}
	if !changed {
		return
	}
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	b.WriteString("--- " + orDevNull(oldPath) + "\n+++ " + orDevNull(newPath) + "\n")
	for start := 0; start < len(ops); {
		// The next change, and the hunk around it: changes closer than
		// twice the context share one hunk.
		first := start
		for first < len(ops) && ops[first].kind == ' ' {
			first++
		}
		if first == len(ops) {
			break
		}
		from := max(first-diffContext, start)
		end := first
		for {
			last := end
			for last < len(ops) && ops[last].kind != ' ' {
				last++
			}
			next := last
			for next < len(ops) && ops[next].kind == ' ' {
				next++
			}
			if next < len(ops) && next-last <= 2*diffContext {
				end = next
				continue
			}
			end = min(last+diffContext, len(ops))
			break
		}
		writeHunk(&b.Builder, ops[from:end], a, c)
		start = end
	}
	if b.budget != nil && b.Len() > approval.MaxContextDiffBytes {
		panic(overBudget{})
	}
}

// writeHunk writes one hunk: its header, then each line with its mark.
func writeHunk(b *strings.Builder, ops []op, a, c []string) {
	oldStart, newStart, oldN, newN := -1, -1, 0, 0
	for _, o := range ops {
		if o.kind != '+' {
			if oldStart < 0 {
				oldStart = o.a
			}
			oldN++
		}
		if o.kind != '-' {
			if newStart < 0 {
				newStart = o.b
			}
			newN++
		}
	}
	b.WriteString("@@ -" + hunkRange(oldStart, oldN, ops[0].a) + " +" + hunkRange(newStart, newN, ops[0].b) + " @@\n")
	for _, o := range ops {
		var line string
		if o.kind == '+' {
			line = c[o.b]
		} else {
			line = a[o.a]
		}
		b.WriteByte(o.kind)
		b.WriteString(strings.TrimSuffix(line, "\n"))
		b.WriteByte('\n')
		if !strings.HasSuffix(line, "\n") {
			b.WriteString("\\ No newline at end of file\n")
		}
	}
}

// hunkRange is "start,count" with start counted from 1; an empty side
// names the line before it (0 at the top of the file).
func hunkRange(start, n, at int) string {
	if n == 0 {
		return strconv.Itoa(at) + ",0"
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(n)
}

func orDevNull(p string) string {
	if p == "" {
		return "/dev/null"
	}
	return p
}
