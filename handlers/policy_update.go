package handlers

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// PolicyUpdate saves a tool's policy, or tests it against sample arguments
// (action=test). A bad condition re-renders the form with the compiler's
// message (422). When saving would end standing grants, or a block would end
// calls in flight, the form first shows how many, and saves only once that
// is confirmed (action=confirm).
func (h *Handler) PolicyUpdate(c echo.Context) error {
	ctx := c.Request().Context()
	t, err := h.toolParam(c)
	if err != nil {
		return err
	}
	f, err := h.policyForm(c, t)
	if err != nil {
		return err
	}
	f.Mode = approval.Mode(c.Request().PostFormValue("mode"))
	f.Standing = c.Request().PostFormValue("standing_approval") == "1"
	// The checkbox follows a hidden "0": a form without the field keeps
	// the tool's setting.
	f.Matchable = t.Matchable
	if sent, ok := c.Request().PostForm["matchable"]; ok {
		f.Matchable = slices.Contains(sent, "1")
	}
	f.Condition = strings.TrimSpace(c.Request().PostFormValue("condition"))
	f.Sample = c.Request().PostFormValue("sample")
	f.Version, _ = strconv.Atoi(c.Request().PostFormValue("version"))
	action := c.Request().PostFormValue("action")
	maxGrant, ok := grantCapParam(c.Request().PostFormValue("max_grant"))
	if _, sent := c.Request().PostForm["max_grant"]; !sent {
		maxGrant = t.MaxGrant() // a form without the field keeps the cap
	}
	f.MaxGrant = maxGrant
	if f.Deciders, err = h.decidersOfTool(ctx, t); err != nil {
		return err
	}
	rule, rulePicks, ruleErr := decidersParam(c, t, &f.Deciders)
	if ruleErr != "" {
		f.Deciders.Error = ruleErr
		return Render(c, http.StatusUnprocessableEntity, views.PolicyEdit(f))
	}
	if !ok {
		f.Error = "Choose the longest standing grant from the list."
		return Render(c, http.StatusUnprocessableEntity, views.PolicyEdit(f))
	}
	esc, ok := h.escalationParam(c, t, &f)
	if !ok {
		return Render(c, http.StatusUnprocessableEntity, views.PolicyEdit(f))
	}
	if !f.Mode.Valid() {
		f.Error = "Choose a mode: allow, require approval or block."
		return Render(c, http.StatusUnprocessableEntity, views.PolicyEdit(f))
	}
	if f.Condition != "" {
		if err := approval.CompileCondition(f.Condition); err != nil {
			f.Error = "This condition does not compile: " + err.Error()
			return Render(c, http.StatusUnprocessableEntity, views.PolicyEdit(f))
		}
	}
	p := approval.Policy{Mode: f.Mode, StandingApproval: f.Standing, Condition: f.Condition, MaxGrant: f.MaxGrant, Matchable: f.Matchable,
		Rule: rule, DecidersCondition: rulePicks, Escalation: esc}
	if action == "test" {
		f.TestResult, f.TestTone = testPolicy(p, f.Sample)
		return Render(c, http.StatusOK, views.PolicyEdit(f))
	}
	if p.Mode == approval.Mode(t.Mode) && p.StandingApproval == t.StandingApproval && p.Condition == t.Condition && p.MaxGrant == t.MaxGrant() &&
		p.Matchable == t.Matchable && decidersChanged(t, rule, rulePicks) == "" && p.Escalation == t.Escalation() {
		h.flash(c, "No changes to "+t.DisplayName+".", false)
		return redirect(c, "/admin/policies")
	}
	if action != "confirm" {
		impact, err := h.DB.PolicyImpact(ctx, t.ID)
		if err != nil {
			return err
		}
		if iv := impactView(impact, p); iv.Total() > 0 || iv.Calls() > 0 {
			f.Impact = &iv
			return Render(c, http.StatusOK, views.PolicyEdit(f))
		}
	}
	saved, err := h.DB.UpdatePolicy(ctx, CurrentUser(c).Actor(), t.ID, f.Version, p)
	if e := approval.AsError(err); e != nil && e.Kind == approval.KindConflict {
		f.Error = e.Message
		return Render(c, http.StatusConflict, views.PolicyEdit(f))
	}
	if e := approval.AsError(err); e != nil && e.Code == approval.CodeInvalidEscalation {
		f.Escalation.Error = e.Message
		return Render(c, http.StatusUnprocessableEntity, views.PolicyEdit(f))
	}
	if e := approval.AsError(err); e != nil && e.Code == approval.CodeUnknownDeciderTeam {
		f.Deciders.Error = e.Message
		return Render(c, http.StatusUnprocessableEntity, views.PolicyEdit(f))
	}
	if err != nil {
		return err
	}
	h.flash(c, fmt.Sprintf("Saved %s (policy version %d): %s.", saved.DisplayName, saved.PolicyVersion, policyChanges(t, p)), false)
	return redirect(c, "/admin/policies")
}

// impactView is what saving p would end: the grants that lapse with any
// change, and, when p blocks the tool, its calls in flight.
func impactView(i db.Impact, p approval.Policy) views.ImpactView {
	v := views.ImpactView{AlwaysGrants: i.AlwaysGrants, ConversationGrants: i.ConversationGrants, PreApprovals: i.PreApprovals}
	if p.Blocks() {
		v.WaitingCalls, v.ApprovedCalls = i.WaitingCalls, i.ApprovedCalls
	}
	return v
}

// policyChanges says what saving p changes of t's policy, part by part.
func policyChanges(t db.Tool, p approval.Policy) string {
	var parts []string
	if old := approval.Mode(t.Mode); old != p.Mode {
		parts = append(parts, "mode "+modeName(old)+" → "+modeName(p.Mode))
	}
	if t.StandingApproval != p.StandingApproval {
		parts = append(parts, "standing approval "+offered(t.StandingApproval)+" → "+offered(p.StandingApproval))
	}
	if t.Matchable != p.Matchable {
		parts = append(parts, "“Always allow calls like this” "+offered(t.Matchable)+" → "+offered(p.Matchable))
	}
	switch {
	case t.Condition == p.Condition:
	case t.Condition == "":
		parts = append(parts, "condition added: "+p.Condition)
	case p.Condition == "":
		parts = append(parts, "condition removed (was "+t.Condition+")")
	default:
		parts = append(parts, "condition "+t.Condition+" → "+p.Condition)
	}
	if w := decidersChanged(t, p.Rule, p.DecidersCondition); w != "" {
		parts = append(parts, w)
	}
	parts = append(parts, escalationChange(t, p)...)
	return strings.Join(parts, "; ")
}

func modeName(m approval.Mode) string {
	switch m {
	case approval.ModeAllow:
		return "Allow"
	case approval.ModeBlock:
		return "Block"
	}
	return "Require approval"
}

func offered(b bool) string {
	if b {
		return "offered"
	}
	return "not offered"
}

// testPolicy says what the check would answer for sample arguments under p
// (before grants, which depend on the person).
func testPolicy(p approval.Policy, sample string) (string, string) {
	args := approval.ParseArguments(sample)
	res, err := approval.EvaluateConditionDetail(p.Condition, args)
	if p.Condition == "" {
		res = approval.NoCondition
	}
	out := approval.Evaluate(approval.CheckInput{Policy: p, Condition: res, DeniedThreshold: 1 << 30})
	switch {
	case out.Verdict == approval.Deny:
		return "Denied: the tool is blocked.", "bad"
	case out.Verdict == approval.Allow && p.Condition != "":
		return "Runs without asking: the condition is false for these arguments.", "ok"
	case out.Verdict == approval.Allow:
		return "Runs without asking.", "ok"
	case err != nil:
		return "Asks a person: the condition could not be evaluated (" + err.Error() + ").", "warn"
	case res == approval.ConditionTrue:
		return "Asks a person: the condition is true for these arguments.", "warn"
	}
	return "Asks a person.", "warn"
}
