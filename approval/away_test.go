package approval

import (
	"testing"
	"time"
)

func TestParseEscalation(t *testing.T) {
	cap := 10 * time.Minute
	ok := []struct {
		team, after string
		want        Escalation
	}{
		{"", "", Escalation{}},
		{" oncall ", "1s", Escalation{"oncall", time.Second}},
		{"oncall", "90", Escalation{"oncall", 90 * time.Second}},
		{"oncall", "5m", Escalation{"oncall", 5 * time.Minute}},
		{"oncall", "9m59s", Escalation{"oncall", 9*time.Minute + 59*time.Second}},
	}
	for _, c := range ok {
		got, err := ParseEscalation(c.team, c.after, cap)
		if err != nil || got != c.want {
			t.Errorf("%q %q: %+v %v, want %+v", c.team, c.after, got, err, c.want)
		}
	}
	for _, c := range []struct{ team, after string }{
		{"oncall", ""}, {"", "5m"}, {"oncall", "0"}, {"oncall", "-5m"}, {"oncall", "500ms"}, {"oncall", "1.5s"},
		{"oncall", "10m"}, {"oncall", "1h"}, {"oncall", "soon"}, {"oncall", "99999999999999999999"},
	} {
		if got, err := ParseEscalation(c.team, c.after, cap); err == nil || KindOf(err) != KindUnprocessable {
			t.Errorf("%q %q: accepted %+v (%v)", c.team, c.after, got, err)
		}
	}
}

func TestDelayWords(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Second: "1 second", 90 * time.Second: "1 minute 30 seconds", 15 * time.Minute: "15 minutes",
		time.Hour: "1 hour", 90 * time.Minute: "1 hour 30 minutes", 45 * time.Second: "45 seconds",
	} {
		if got := DelayWords(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
	if got := (Escalation{"oncall", 15 * time.Minute}).Words(); got != "to oncall after 15 minutes" {
		t.Errorf("words: %q", got)
	}
}

func TestCheckDelegationEnd(t *testing.T) {
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		until time.Time
		ok    bool
	}{
		{now.Add(time.Minute), true}, {now.Add(MaxDelegation), true},
		{now, false}, {now.Add(-time.Hour), false}, {now.Add(MaxDelegation + time.Second), false},
	} {
		if err := CheckDelegationEnd(c.until, now); (err == nil) != c.ok {
			t.Errorf("%v: %v", c.until, err)
		}
	}
}
