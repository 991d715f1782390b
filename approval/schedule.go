package approval

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// ParseSchedule checks a five-field cron expression (minute hour
// day-of-month month day-of-week, UTC) and returns it described in words
// with its next run after now.
func ParseSchedule(expr string, now time.Time) (string, error) {
	expr, sched, err := parseCron(expr)
	if err != nil {
		return "", err
	}
	next := sched.Next(now.UTC())
	return describeCron(expr) + " (UTC) — next run " + next.Format("Mon Jan 2, 15:04 UTC"), nil
}

// CheckSchedule returns expr with its whitespace normalised, the form in
// which a schedule is stored, or an error (KindUnprocessable) when it is not
// a five-field cron expression. An empty schedule (none) is valid.
func CheckSchedule(expr string) (string, error) {
	if strings.TrimSpace(expr) == "" {
		return "", nil
	}
	expr, _, err := parseCron(expr)
	return expr, err
}

func parseCron(expr string) (string, cron.Schedule, error) {
	expr = strings.Join(strings.Fields(expr), " ")
	sched, err := cron.ParseStandard(expr)
	if err != nil || strings.HasPrefix(expr, "@") || strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		if err == nil {
			err = fmt.Errorf("use five fields: minute hour day-of-month month day-of-week")
		}
		return "", nil, Errorf(KindUnprocessable, CodeInvalidRequest, "That schedule is not a cron expression Countersign understands: %v.", err)
	}
	return expr, sched, nil
}

var weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

func describeCron(expr string) string {
	f := strings.Fields(expr)
	min, hour, dom, mon, dow := f[0], f[1], f[2], f[3], f[4]
	num := func(s string) (int, bool) { n, err := strconv.Atoi(s); return n, err == nil }
	m, mok := num(min)
	h, hok := num(hour)
	at := fmt.Sprintf("%02d:%02d", h, m)
	switch {
	case strings.HasPrefix(min, "*/") && hour == "*" && dom == "*" && mon == "*" && dow == "*":
		return "Every " + strings.TrimPrefix(min, "*/") + " minutes"
	case mok && hour == "*" && dom == "*" && mon == "*" && dow == "*":
		return fmt.Sprintf("Every hour at minute %d", m)
	case mok && hok && dom == "*" && mon == "*" && dow == "*":
		return "Every day at " + at
	case mok && hok && dom == "*" && mon == "*" && (dow == "1-5" || dow == "MON-FRI"):
		return "Every weekday at " + at
	case mok && hok && dom == "*" && mon == "*":
		if d, ok := num(dow); ok && d >= 0 && d <= 7 {
			return "Every " + weekdays[d] + " at " + at
		}
	case mok && hok && mon == "*" && dow == "*":
		if d, ok := num(dom); ok {
			return fmt.Sprintf("On day %d of every month at %s", d, at)
		}
	}
	return "On the schedule “" + expr + "”"
}

// NextRuns returns the next n times a five-field cron expression (UTC)
// fires after now, or the error CheckSchedule gives for it.
func NextRuns(expr string, now time.Time, n int) ([]time.Time, error) {
	_, sched, err := parseCron(expr)
	if err != nil {
		return nil, err
	}
	out := make([]time.Time, 0, n)
	at := now.UTC()
	for range n {
		at = sched.Next(at)
		if at.IsZero() {
			break // an expression that never fires again
		}
		out = append(out, at)
	}
	return out, nil
}
