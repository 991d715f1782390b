package handlers_test

import (
	"regexp"
	"strings"
	"testing"
)

// A page title that names an untrusted tool carries its hidden and
// direction-changing characters as markers, in <title> and data-title.
func TestTitleMarksHiddenCharacters(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	if _, err := l.DB.Pool.Exec(t.Context(), `UPDATE tools SET display_name = 'Create '||chr(8238)||'tneve'||chr(8203)
		WHERE connector = 'calendar' AND name = 'create_event'`); err != nil {
		t.Fatal(err)
	}
	id := toolID(t, l.Env, "calendar", "create_event")
	resp, body := admin.Get("/admin/policies/" + id)
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	title := regexp.MustCompile(`<title>([^<]*)</title>`).FindStringSubmatch(body)
	data := regexp.MustCompile(`data-title="([^"]*)"`).FindStringSubmatch(body)
	if title == nil || data == nil {
		t.Fatal("no title")
	}
	for _, s := range []string{title[1], data[1]} {
		if strings.ContainsAny(s, "\u202e\u200b") || !strings.Contains(s, "Create ⟨U+202E⟩tneve⟨U+200B⟩ · Policies") {
			t.Fatalf("title %q", s)
		}
	}
}
