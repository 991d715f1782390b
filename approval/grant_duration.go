package approval

import (
	"strconv"
	"strings"
	"time"
)

// GrantChoices are the lengths a standing grant can be given for, and the
// caps an admin can set, shortest first. Zero, "until revoked", is offered
// only where the tool has no cap.
var GrantChoices = []time.Duration{time.Hour, 8 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

// MaxGrantCap is the longest cap an admin can set short of "no limit".
const MaxGrantCap = 365 * 24 * time.Hour

// GrantDurationsUpTo lists the choices a person has for a tool whose
// standing grants may last at most limit (0: no limit): every choice up to
// the limit, the limit itself when it is not one of them, and "until
// revoked" (0) last when there is no limit.
func GrantDurationsUpTo(limit time.Duration) []time.Duration {
	var out []time.Duration
	for _, d := range GrantChoices {
		if limit == 0 || d <= limit {
			out = append(out, d)
		}
	}
	if limit > 0 && (len(out) == 0 || out[len(out)-1] != limit) {
		out = append(out, limit)
	}
	if limit == 0 {
		out = append(out, 0)
	}
	return out
}

// GrantLength resolves the duration a person asked for (seconds as sent by
// the form; "" when not sent, "0" for "until revoked") against the tool's
// cap (0: no limit). Not sent means the longest allowed: the cap, or no
// end. A duration that is not a positive whole number of seconds, that is
// longer than the cap, or "until revoked" under a cap, is refused: the
// grant is never made longer than what the admin allows.
func GrantLength(requested string, limit time.Duration) (time.Duration, error) {
	requested = strings.TrimSpace(requested)
	if requested == "" {
		return limit, nil
	}
	secs, err := strconv.ParseInt(requested, 10, 64)
	if err != nil || secs < 0 || secs > int64(MaxGrantCap/time.Second) {
		return 0, Errorf(KindUnprocessable, CodeInvalidDuration, "Choose how long the approval lasts from the list.")
	}
	d := time.Duration(secs) * time.Second
	if limit > 0 && (d == 0 || d > limit) {
		return 0, Errorf(KindUnprocessable, CodeInvalidDuration,
			"An admin allows standing approval of this tool for at most %s.", DurationWords(limit))
	}
	return d, nil
}

// ValidGrantCap reports whether an admin's cap is allowed: 0 (no limit) or
// a positive whole number of seconds up to MaxGrantCap.
func ValidGrantCap(d time.Duration) bool {
	return d == 0 || (d >= time.Second && d <= MaxGrantCap && d%time.Second == 0)
}

// DurationWords says a grant's length in words: "1 hour", "8 hours",
// "7 days", "until revoked".
func DurationWords(d time.Duration) string {
	switch {
	case d <= 0:
		return "until revoked"
	case d%(24*time.Hour) == 0:
		return count(int64(d/(24*time.Hour)), "day")
	case d%time.Hour == 0:
		return count(int64(d/time.Hour), "hour")
	case d%time.Minute == 0:
		return count(int64(d/time.Minute), "minute")
	}
	return count(int64(d/time.Second), "second")
}

func count(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatInt(n, 10) + " " + word + "s"
}

// CodeInvalidDuration: a standing decision asked for a length the tool's
// policy does not allow.
const CodeInvalidDuration = "invalid_duration"

// ActionGrantExpired is the audit action of a standing grant that reached
// its end; it is written once per grant.
const ActionGrantExpired = "grant expired"

// DefaultStanding is whether a new tool offers standing approval: not for
// a tool the catalog marks destructiveHint: true (an explicit hint, not the
// MCP default), nor for one of unknown behaviour (no hints at all), nor
// where the catalog says standing=false.
func DefaultStanding(a Annotations, standing *bool) bool {
	if a.Unknown() || a.DestructiveHint != nil && *a.DestructiveHint && !a.ReadOnly() {
		return false
	}
	return hint(standing, true)
}
