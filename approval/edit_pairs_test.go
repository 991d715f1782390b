package approval

import "testing"

func TestEditPairs(t *testing.T) {
	cases := []struct {
		name, args string
		want       [][2]string // old, new
		path       string
	}{
		{"NewFirst", `{"file_path":"src/a.go","new_string":"NEW","old_string":"OLD"}`, [][2]string{{"OLD", "NEW"}}, "src/a.go"},
		{"OldFirst", `{"old_string":"OLD","new_string":"NEW","file_path":"b.txt"}`, [][2]string{{"OLD", "NEW"}}, "b.txt"},
		{"StrReplace", `{"path":"c.py","new_str":"y","old_str":"x"}`, [][2]string{{"x", "y"}}, "c.py"},
		{"MultiEdit", `{"file_path":"d.go","edits":[{"new_string":"2","old_string":"1"},{"old_string":"3","new_string":"4"}]}`,
			[][2]string{{"1", "2"}, {"3", "4"}}, "d.go"},
		{"OnlyNew", `{"file_path":"e.go","new_string":"x"}`, nil, ""},
		{"NotAnEdit", `{"to":"a@example.org","subject":"hi"}`, nil, ""},
		{"EditsNotAList", `{"edits":"sure"}`, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := EditPairs(Preview(ParseArguments(c.args)))
			if len(got) != len(c.want) {
				t.Fatalf("%d pairs, want %d: %+v", len(got), len(c.want), got)
			}
			for i, p := range got {
				if p.Old.Value != c.want[i][0] || p.New.Value != c.want[i][1] || p.Path != c.path {
					t.Fatalf("pair %d = %q → %q in %q, want %q in %q", i, p.Old.Value, p.New.Value, p.Path, c.want[i], c.path)
				}
			}
		})
	}
}
