package approval

import (
	"strconv"
	"strings"
	"time"
)

// Audit actions of escalation and delegation.
const (
	// ActionEscalated: nobody answered an item within its rule's delay, so
	// the rule's backup team was told and may decide it too.
	ActionEscalated = "escalated"
	// ActionDelegationStarted: a person named a delegate until a time.
	ActionDelegationStarted = "delegation started"
	// ActionDelegationEnded: a delegation was ended early, by the person or
	// an admin.
	ActionDelegationEnded = "delegation ended"
)

// Error codes of escalation and delegation.
const (
	CodeInvalidEscalation = "invalid_escalation"
	CodeInvalidDelegation = "invalid_delegation"
	// CodeUnknownDeciderTeam: a policy's deciding team does not exist.
	CodeUnknownDeciderTeam = "unknown_decider_team"
)

// MaxDelegation is the longest a delegation may last: a delegate decides
// for someone who is away, not in their place for good.
const MaxDelegation = 60 * 24 * time.Hour

// MinEscalateAfter is the shortest escalation delay a rule may name.
const MinEscalateAfter = time.Second

// Escalation is a tool's escalation rule: when nobody answered an item
// After it was created, Team is told and may decide it too. The zero value
// is no escalation.
type Escalation struct {
	Team  string
	After time.Duration
}

// On reports whether the rule escalates at all.
func (e Escalation) On() bool { return e.Team != "" }

// Words says the rule for a person ("to finance after 15 minutes"); "" when
// off.
func (e Escalation) Words() string {
	if !e.On() {
		return ""
	}
	return "to " + e.Team + " after " + DelayWords(e.After)
}

// ParseEscalation reads the policy form's escalate_to and escalate_after:
// both empty is no escalation; a team needs a delay of at least a second,
// written in seconds ("90") or as a Go duration ("15m", "1h30m"), shorter
// than the wait cap (an escalation at or after the expiry would never
// happen: the expiry wins).
func ParseEscalation(team, after string, waitCap time.Duration) (Escalation, error) {
	team, after = strings.TrimSpace(team), strings.TrimSpace(after)
	if team == "" && after == "" {
		return Escalation{}, nil
	}
	if team == "" {
		return Escalation{}, Errorf(KindUnprocessable, CodeInvalidEscalation, "Choose the team to escalate to, or clear the delay.")
	}
	if after == "" {
		return Escalation{}, Errorf(KindUnprocessable, CodeInvalidEscalation, "Say after how long the call escalates, such as 15m.")
	}
	d, err := time.ParseDuration(after)
	if secs, e := strconv.ParseInt(after, 10, 64); e == nil {
		d, err = time.Duration(secs)*time.Second, nil
	}
	if err != nil || d < MinEscalateAfter || d%time.Second != 0 {
		return Escalation{}, Errorf(KindUnprocessable, CodeInvalidEscalation,
			"Write the delay as whole seconds or a duration such as 90s, 15m or 1h.")
	}
	if waitCap > 0 && d >= waitCap {
		return Escalation{}, Errorf(KindUnprocessable, CodeInvalidEscalation,
			"Calls expire after %s, so an escalation after %s would never happen. Choose a shorter delay.", DelayWords(waitCap), DelayWords(d))
	}
	return Escalation{Team: team, After: d}, nil
}

// DelayWords writes a delay for people: "1 second", "15 minutes",
// "1 hour 30 minutes".
func DelayWords(d time.Duration) string {
	d = d.Round(time.Second)
	if d <= 0 || d%time.Minute == 0 && d < time.Hour || d%time.Hour == 0 || d < time.Minute {
		return DurationWords(max(d, time.Second))
	}
	var parts []string
	for _, u := range []struct {
		d    time.Duration
		word string
	}{{time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if n := int64(d / u.d); n > 0 {
			parts = append(parts, count(n, u.word))
			d -= time.Duration(n) * u.d
		}
	}
	return strings.Join(parts, " ")
}

// CheckDelegationEnd refuses an end that is not in the future (by the
// database's clock, now) or lies more than MaxDelegation ahead.
func CheckDelegationEnd(until, now time.Time) error {
	switch {
	case !until.After(now):
		return Errorf(KindUnprocessable, CodeInvalidDelegation, "Choose an end in the future.")
	case until.Sub(now) > MaxDelegation:
		return Errorf(KindUnprocessable, CodeInvalidDelegation, "A delegation lasts at most %d days.", int(MaxDelegation/(24*time.Hour)))
	}
	return nil
}
