package views

import "strings"

// listWords joins names as "A", "A and B" or "A, B and C", each with its
// hidden characters marked.
func listWords(names []string) string {
	marked := make([]string, len(names))
	for i, n := range names {
		marked[i] = "“" + Marked(n) + "”"
	}
	switch len(marked) {
	case 0:
		return "the tools that require one"
	case 1:
		return marked[0]
	}
	return strings.Join(marked[:len(marked)-1], ", ") + " and " + marked[len(marked)-1]
}
