package handlers

import (
	"strconv"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// escalationParam reads the policy form's escalate_to and escalate_after
// into f and returns the rule. A form without either field keeps the
// tool's rule. A rule that cannot hold (a team without a delay, a delay at
// or past the wait cap, which the expiry would always win) sets f's
// message and is refused (ok false).
func (h *Handler) escalationParam(c echo.Context, t db.Tool, f *views.PolicyForm) (approval.Escalation, bool) {
	form := c.Request().PostForm
	_, sentTo := form["escalate_to"]
	_, sentAfter := form["escalate_after"]
	if !sentTo && !sentAfter {
		f.Escalation.Team, f.Escalation.After = escalationInput(t.Escalation())
		return t.Escalation(), true
	}
	f.Escalation.Team, f.Escalation.After = form.Get("escalate_to"), form.Get("escalate_after")
	e, err := approval.ParseEscalation(f.Escalation.Team, f.Escalation.After, h.Settings.ApprovalTimeout)
	if ae := approval.AsError(err); ae != nil {
		f.Escalation.Error = ae.Message
		return e, false
	}
	return e, err == nil
}

// escalationInput writes a rule as the form shows it: the team, and the
// delay in the shortest way ("15m", "90s").
func escalationInput(e approval.Escalation) (team, after string) {
	if !e.On() {
		return "", ""
	}
	switch {
	case e.After%time.Hour == 0:
		return e.Team, strconv.FormatInt(int64(e.After/time.Hour), 10) + "h"
	case e.After%time.Minute == 0:
		return e.Team, strconv.FormatInt(int64(e.After/time.Minute), 10) + "m"
	}
	return e.Team, strconv.FormatInt(int64(e.After/time.Second), 10) + "s"
}

// escalationChange says how saving p changes t's escalation rule, for the
// saved message.
func escalationChange(t db.Tool, p approval.Policy) []string {
	old, now := t.Escalation(), p.Escalation
	switch {
	case old == now:
		return nil
	case !old.On():
		return []string{"escalation added: " + now.Words()}
	case !now.On():
		return []string{"escalation removed (was " + old.Words() + ")"}
	}
	return []string{"escalation " + old.Words() + " → " + now.Words()}
}
