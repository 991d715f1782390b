package approval

import (
	"strings"
	"testing"
	"time"
)

func TestParseSchedule(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	cases := map[string]string{
		"0 9 * * *":    "Every day at 09:00 (UTC) — next run Mon Nov 30, 09:00 UTC",
		"30 8 * * 1":   "Every Monday at 08:30 (UTC) — next run Mon Nov 30, 08:30 UTC",
		"0 7 * * 1-5":  "Every weekday at 07:00",
		"*/15 * * * *": "Every 15 minutes",
		"5 * * * *":    "Every hour at minute 5",
		"0 6 1 * *":    "On day 1 of every month at 06:00",
		"0 6 1 1 *":    "On the schedule “0 6 1 1 *”",
	}
	for expr, want := range cases {
		got, err := ParseSchedule(expr, now)
		if err != nil || !strings.HasPrefix(got, want) {
			t.Errorf("%q: %q %v", expr, got, err)
		}
	}
	for _, bad := range []string{"", "every day", "61 * * * *", "* * * *", "@daily", "0 9 * * * *"} {
		if _, err := ParseSchedule(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCheckSchedule(t *testing.T) {
	for in, want := range map[string]string{"": "", "  ": "", " 0 9  * * 1-5 ": "0 9 * * 1-5"} {
		if got, err := CheckSchedule(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, bad := range []string{"not a cron", "61 * * * *", "@daily", "TZ=UTC 0 9 * * *", "0 9 * * * *"} {
		if got, err := CheckSchedule(bad); KindOf(err) != KindUnprocessable || got != "" {
			t.Errorf("%q: %q %v", bad, got, err)
		}
	}
}

func TestFingerprint(t *testing.T) {
	base := func() Definition {
		return Definition{Name: "Weekly report", Instructions: "Summarise the week.", Settings: []byte(`{"tone":"brief","max":3}`),
			Steps: []Step{
				{ID: "s1", Title: "Collect", Instructions: "Search mail", WorkType: WorkType{"search", "1"}, Tools: []Pair{{"mail", "search_messages"}}, Position: Position{10, 20}},
				{ID: "s2", Title: "Send", Instructions: "Email it", WorkType: WorkType{"send", "2"}, Tools: []Pair{{"mail", "send_email"}}, Position: Position{30, 40}},
			}}
	}
	fp := func(d Definition) string {
		s, err := d.Fingerprint()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	orig := fp(base())
	moved := base()
	moved.Steps[0].Position = Position{500, 600}
	if fp(moved) != orig {
		t.Fatal("moving a step changed the fingerprint")
	}
	reordered := base()
	reordered.Settings = []byte(`{"max":3,"tone":"brief"}`) // same settings, other key order
	if fp(reordered) != orig {
		t.Fatal("settings key order changed the fingerprint")
	}
	changes := map[string]func(*Definition){
		"instructions":      func(d *Definition) { d.Steps[1].Instructions = "Email it to the team" },
		"setting":           func(d *Definition) { d.Settings = []byte(`{"tone":"long","max":3}`) },
		"step order":        func(d *Definition) { d.Steps[0], d.Steps[1] = d.Steps[1], d.Steps[0] },
		"work type version": func(d *Definition) { d.Steps[0].WorkType.Version = "2" },
		"tools":             func(d *Definition) { d.Steps[0].Tools = append(d.Steps[0].Tools, Pair{"files", "read_file"}) },
		"name":              func(d *Definition) { d.Name = "Monthly report" },
	}
	for name, change := range changes {
		d := base()
		change(&d)
		if fp(d) == orig {
			t.Errorf("changing %s kept the fingerprint", name)
		}
	}
}

func TestLapseReason(t *testing.T) {
	given := PreApprovalPremises{Fingerprint: "f", PolicyVersion: 2, Owner: "alice"}
	cases := []struct {
		now  PreApprovalPremises
		want string
	}{
		{given, ""},
		{PreApprovalPremises{"f", 3, "alice"}, LapsePolicy},
		{PreApprovalPremises{"g", 2, "alice"}, LapseContent},
		{PreApprovalPremises{"f", 2, "bob"}, LapseOwner},
		{PreApprovalPremises{"g", 3, "bob"}, LapseOwner},
	}
	for _, c := range cases {
		if got := LapseReason(given, c.now); got != c.want {
			t.Errorf("%+v: %q, want %q", c.now, got, c.want)
		}
	}
}

func TestLapseCause(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range []string{LapsePolicy, LapseContent, LapseOwner} {
		c := LapseCause(r)
		if c == LapseCause("") || seen[c] {
			t.Errorf("%q: cause %q is not its own", r, c)
		}
		seen[c] = true
	}
}

func TestNextRuns(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC) // a Friday
	got, err := NextRuns("0 9 * * 1-5", now, 3)
	want := []time.Time{
		time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC),
	}
	if err != nil || len(got) != 3 {
		t.Fatalf("%v %v", got, err)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("run %d: %v, want %v", i, got[i], want[i])
		}
	}
	if _, err := NextRuns("0 9 * *", now, 3); err == nil {
		t.Error("a four-field expression gave run times")
	}
}
