package views

import (
	"strconv"
	"time"
)

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

// When formats a time for people: relative when recent, a date otherwise.
func When(t time.Time, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 0:
		d = -d
		if d < time.Minute {
			return "in a few seconds"
		}
		if d < time.Hour {
			return "in " + plural(int(d.Minutes()), "minute")
		}
		return "at " + t.UTC().Format("Jan 2, 15:04 UTC")
	case d < 45*time.Second:
		return "just now"
	case d < time.Hour:
		return plural(int(d.Minutes()+0.5), "minute") + " ago"
	case d < 24*time.Hour:
		return plural(int(d.Hours()), "hour") + " ago"
	}
	return t.UTC().Format("Jan 2, 2006 15:04 UTC")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// ISO formats t for a <time datetime> attribute.
func ISO(t time.Time) string { return t.UTC().Format(time.RFC3339) }
