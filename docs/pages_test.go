package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The pages for newcomers and operators stay whole: none grows past what a
// person reads (a botched edit once repeated a section thousands of times),
// and no paragraph of three lines or more appears twice on a page.
func TestPagesAreWhole(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "README.md"))
	if len(pages) < 4 {
		t.Fatalf("pages found: %v", pages)
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 200_000 {
			t.Errorf("%s: %d bytes", p, len(b))
			continue
		}
		seen := map[string]bool{}
		for _, para := range strings.Split(string(b), "\n\n") {
			para = strings.TrimSpace(para)
			if strings.Count(para, "\n") < 2 {
				continue
			}
			if seen[para] {
				t.Errorf("%s: this paragraph appears twice:\n%s", p, para)
			}
			seen[para] = true
		}
	}
}
