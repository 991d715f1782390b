package approval

import (
	"unicode/utf8"
)

// Diff preview limits, in characters. A diff is context a runtime computed
// beside the arguments: shown whole when small, and otherwise with its
// unchanged lines folded; changed lines are kept.
const (
	DiffFileChars    = 4096  // a file's diff beyond which its unchanged context is folded; also a line's limit
	DiffCardChars    = 16384 // a whole diff beyond which unchanged context is folded; a raw diff's limit
	DiffKeptChars    = 65536 // the most text the preview keeps; lines past it are counted, not kept
	DiffContextLines = 2     // unchanged lines kept next to a change when context is folded
)

// DiffOmitted is a line standing for the lines left out of a preview past
// DiffKeptChars (changed lines among them).
const DiffOmitted DiffLineKind = "omitted"

// DiffPreview is what a reviewer sees of a runtime-computed diff: the parsed
// files (unchanged context folded when large), or the text itself when it
// does not parse. It is built on the server before it is stored, like an
// ArgumentPreview, and removed with it after the retention period.
type DiffPreview struct {
	Parsed bool       `json:"parsed"`
	Files  []DiffFile `json:"files,omitempty"`
	// Folded is set when unchanged lines were folded for size.
	Folded bool `json:"folded,omitempty"`
	// Omitted counts lines left out past DiffKeptChars.
	Omitted int `json:"omitted,omitempty"`
	// Raw is the text of a diff that did not parse: whole, or its head and
	// tail with RawHidden characters left out between them.
	Raw       string `json:"raw,omitempty"`
	RawTail   string `json:"raw_tail,omitempty"`
	RawHidden int    `json:"raw_hidden,omitempty"`
	Problem   string `json:"problem,omitempty"`
	Length    int    `json:"length"` // characters in the diff as sent
	// Removed is set when the preview was deleted after the retention period.
	Removed bool `json:"removed,omitempty"`
}

// PreviewDiff builds the preview of a runtime's diff; nil when there is none.
func PreviewDiff(s string) *DiffPreview {
	if s == "" {
		return nil
	}
	s = printable(s)
	p := &DiffPreview{Length: utf8.RuneCountInString(s)}
	d, err := ParseDiff(s)
	if err != nil {
		p.Problem = err.Error()
		p.Raw, p.RawTail, p.RawHidden = headTail(s, DiffCardChars)
		return p
	}
	p.Parsed = true
	fold := p.Length > DiffCardChars
	budget := DiffKeptChars
	for fi := range d.Files {
		f := &d.Files[fi]
		foldFile := fold || fileChars(*f) > DiffFileChars
		for hi := range f.Hunks {
			h := &f.Hunks[hi]
			if budget <= 0 {
				p.Omitted += len(h.Lines)
				h.Lines = []DiffLine{{Kind: DiffOmitted, Folded: len(h.Lines)}}
				continue
			}
			if foldFile {
				var folded bool
				h.Lines, folded = foldContext(h.Lines)
				p.Folded = p.Folded || folded
			}
			h.Lines, budget = keepWithin(h.Lines, budget, &p.Omitted)
		}
	}
	p.Files = d.Files
	return p
}

// fileChars is about how many characters a file's diff holds.
func fileChars(f DiffFile) int {
	n := 0
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			n += utf8.RuneCountInString(l.Text) + 1
		}
	}
	return n
}

// foldContext replaces each run of unchanged lines longer than twice
// DiffContextLines (plus one: folding a single line hides nothing worth
// it) by its first and last DiffContextLines lines around a fold line;
// at a hunk's ends only the side next to a change is kept.
func foldContext(lines []DiffLine) ([]DiffLine, bool) {
	var out []DiffLine
	folded := false
	for i := 0; i < len(lines); {
		if lines[i].Kind != DiffContext {
			out = append(out, lines[i])
			i++
			continue
		}
		j := i
		for j < len(lines) && (lines[j].Kind == DiffContext || (lines[j].Kind == DiffNoEOL && j > i)) {
			j++
		}
		head, tail := DiffContextLines, DiffContextLines
		if i == 0 {
			head = 0
		}
		if j == len(lines) {
			tail = 0
		}
		if j-i > head+tail+1 {
			out = append(out, lines[i:i+head]...)
			out = append(out, DiffLine{Kind: DiffFold, Folded: j - i - head - tail})
			out = append(out, lines[j-tail:j]...)
			folded = true
		} else {
			out = append(out, lines[i:j]...)
		}
		i = j
	}
	return out, folded
}

// keepWithin shortens long lines (head and tail, the middle counted) and
// keeps lines while budget lasts; the rest become one DiffOmitted line.
func keepWithin(lines []DiffLine, budget int, omitted *int) ([]DiffLine, int) {
	for i := range lines {
		if budget <= 0 {
			n := 0
			for _, l := range lines[i:] {
				if l.Kind != DiffNoEOL {
					n++
				}
			}
			*omitted += n
			return append(lines[:i:i], DiffLine{Kind: DiffOmitted, Folded: n}), budget
		}
		l := &lines[i]
		if utf8.RuneCountInString(l.Text) > DiffFileChars {
			l.Text, l.Tail, l.Cut = headTail(l.Text, DiffFileChars)
		}
		budget -= utf8.RuneCountInString(l.Text) + utf8.RuneCountInString(l.Tail) + 1
	}
	return lines, budget
}

// headTail keeps s whole up to limit characters; past it, the first three
// quarters and the last quarter of limit, and how many characters were left
// out between them. The end of a text is often the part that matters.
func headTail(s string, limit int) (head, tail string, hidden int) {
	r := []rune(s)
	if len(r) <= limit {
		return s, "", 0
	}
	h, t := limit*3/4, limit/4
	return string(r[:h]), string(r[len(r)-t:]), len(r) - h - t
}

// PreImage is one file's SHA-256 (hex) as the runtime read it to compute
// the diff the person approved: a runtime that finds another hash before
// the call runs asks again.
type PreImage struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// PreImages are the pre-image hashes of the preview's files, in the diff's
// order. None (nil) for no diff, a diff that did not parse, a file the
// runtime did not read, or a preview removed after the retention period.
func (p *DiffPreview) PreImages() []PreImage {
	if p == nil || !p.Parsed || p.Removed {
		return nil
	}
	var out []PreImage
	for _, f := range p.Files {
		if f.PreImage != "" {
			out = append(out, PreImage{Path: f.Path(), SHA256: f.PreImage})
		}
	}
	return out
}

// PreImageHashes are the pre-image hashes alone, for audit lines: a path
// can say more than an auditor needs, a hash says only which contents.
func (p *DiffPreview) PreImageHashes() []string {
	var out []string
	for _, pi := range p.PreImages() {
		out = append(out, pi.SHA256)
	}
	return out
}
