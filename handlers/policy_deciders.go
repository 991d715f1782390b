package handlers

import (
	"context"
	"strconv"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// decidersOfTool fills the form's "Who decides" with t's rule.
func (h *Handler) decidersOfTool(ctx context.Context, t db.Tool) (views.DecidersForm, error) {
	r := t.Rule()
	d := views.DecidersForm{Deciders: r.Deciders, Team: r.Team, Quorum: r.Quorum, Condition: t.DecidersCondition}
	var err error
	d.Teams, err = h.knownTeams(ctx)
	return d, err
}

func (h *Handler) knownTeams(ctx context.Context) ([]string, error) {
	teams, err := h.DB.ListTeams(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(teams))
	for i, t := range teams {
		names[i] = t.Name
	}
	return names, nil
}

// decidersParam reads the policy form's approver rule: deciders,
// decider_team, quorum and deciders_condition. A form without deciders
// keeps the tool's rule. It returns the rule, its condition, and what is
// wrong, in words for the form ("" when nothing).
func decidersParam(c echo.Context, t db.Tool, d *views.DecidersForm) (approval.DeciderRule, string, string) {
	form := c.Request().PostForm
	if _, sent := form["deciders"]; !sent {
		return t.Rule(), t.DecidersCondition, ""
	}
	d.Deciders = approval.Deciders(form.Get("deciders"))
	d.Team = strings.TrimSpace(form.Get("decider_team"))
	d.Condition = strings.TrimSpace(form.Get("deciders_condition"))
	q, err := strconv.Atoi(strings.TrimSpace(form.Get("quorum")))
	if d.Deciders != approval.DecidersQuorum && err != nil {
		q, err = 1, nil
	}
	d.Quorum = q
	if err != nil {
		return approval.DeciderRule{}, "", "Say how many approvals are needed, as a whole number."
	}
	r := approval.DeciderRule{Deciders: d.Deciders, Team: d.Team, Quorum: q}
	if e := approval.AsError(r.Validate()); e != nil {
		return approval.DeciderRule{}, "", e.Message
	}
	if d.Condition != "" {
		if err := approval.CompileCondition(d.Condition); err != nil {
			return approval.DeciderRule{}, "", "The “Only when” condition does not compile: " + err.Error()
		}
	}
	return r.Normal(), d.Condition, ""
}

// decidersChanged says how the rule changes, for the saved message.
func decidersChanged(t db.Tool, r approval.DeciderRule, cond string) string {
	before, after := t.Rule(), r.Normal()
	if before == after && t.DecidersCondition == cond {
		return ""
	}
	words := "who decides: " + after.Words("the owner", "")
	if cond != "" {
		words += " when " + cond
	}
	return words
}
