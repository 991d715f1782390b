package handlers

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// ActivityList shows the calls the signed-in person's agents made — an
// admin's, everyone's — newest first, each with what decided it in words.
// Who sees which calls is db.ListActivity's rule alone.
func (h *Handler) ActivityList(c echo.Context) error {
	ctx := c.Request().Context()
	user := CurrentUser(c)
	f, flt := activityFilter(c.QueryParams(), user.IsAdmin)
	if before, err := strconv.ParseInt(c.QueryParam("before"), 10, 64); err == nil && before > 0 {
		flt.Before = before
	}
	page, err := h.DB.ListActivity(ctx, *user, flt)
	if err != nil {
		return err
	}
	names, err := h.auditNames(ctx)
	if err != nil {
		return err
	}
	agents, err := h.DB.ActivityAgents(ctx, *user)
	if err != nil {
		return err
	}
	v := views.ActivityView{Page: h.Page(c, "Activity", "activity"), Admin: user.IsAdmin, Filter: f, Now: h.Now(),
		Tools: withCurrent(names.tools, f.Tool)}
	for _, a := range agents {
		v.Agents = append(v.Agents, views.Option{Value: a, Label: a})
	}
	v.Agents = withCurrent(v.Agents, f.Agent)
	for _, o := range approval.ActivityOutcomes {
		v.Outcomes = append(v.Outcomes, views.Option{Value: o, Label: outcomeWords[o]})
	}
	if user.IsAdmin {
		people, err := h.DB.ActivityPeople(ctx)
		if err != nil {
			return err
		}
		for _, p := range people {
			v.People = append(v.People, views.Option{Value: p.Subject, Label: p.Name})
		}
		v.People = withCurrent(v.People, f.Person)
	}
	var ids []string
	for _, call := range page.Calls {
		if approval.CanonicalUUID(call.ApprovalID) {
			ids = append(ids, call.ApprovalID)
		}
	}
	open, err := h.DB.MayOpen(ctx, user.Subject, ids)
	if err != nil {
		return err
	}
	for _, call := range page.Calls {
		v.Rows = append(v.Rows, activityRow(call, *user, names, f.Grant == "", open[call.ApprovalID]))
	}
	if flt.Before == 0 {
		if err := h.activityWaiting(c, *user, &v); err != nil {
			return err
		}
	}
	if page.HasOlder {
		v.OlderURL = activityURL(f, page.OldestID)
	}
	if flt.Before > 0 {
		v.NewerURL = activityURL(f, 0)
	}
	return Render(c, http.StatusOK, views.Activity(v))
}

// outcomeWords are the outcome filter's choices.
var outcomeWords = map[string]string{
	approval.OutcomeAllowed:    "Allowed without asking",
	approval.OutcomeApproved:   "Approved by a person",
	approval.OutcomeRejected:   "Rejected by a person",
	approval.OutcomeDenied:     "Denied",
	approval.OutcomeUnanswered: "Not run (no answer, cancelled)",
}

// activityFilter reads the filter from q (a query or a posted form): the
// form's values as sent, and the filter they make. An unknown outcome or
// a grant that is not a number is dropped; the person is an admin's
// choice only.
func activityFilter(q url.Values, admin bool) (views.ActivityFilterView, db.ActivityFilter) {
	f := views.ActivityFilterView{Agent: q.Get("agent"), Tool: q.Get("tool"), Outcome: q.Get("outcome")}
	if admin {
		f.Person = q.Get("person")
	}
	if !slices.Contains(approval.ActivityOutcomes, f.Outcome) {
		f.Outcome = ""
	}
	flt := db.ActivityFilter{Person: f.Person, Agent: f.Agent, Tool: f.Tool, Outcome: f.Outcome}
	if g, err := strconv.ParseInt(q.Get("grant"), 10, 64); err == nil && g > 0 {
		f.Grant, flt.Grant = strconv.FormatInt(g, 10), g
	}
	return f, flt
}

// activityURL is the Activity page with filter f, from before (0: the
// newest).
func activityURL(f views.ActivityFilterView, before int64) string {
	q := url.Values{}
	for _, kv := range f.Hidden() {
		q.Set(kv[0], kv[1])
	}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if len(q) == 0 {
		return "/activity"
	}
	return "/activity?" + q.Encode()
}

// activityRow is one call as viewer reads it; grantLink adds the link to
// every call of the call's grant, mayOpen the link to its request page.
func activityRow(call db.ActivityCall, viewer db.User, names auditNames, grantLink, mayOpen bool) views.ActivityRow {
	r := views.ActivityRow{ID: call.ID, At: call.At, Outcome: call.Outcome(), Tool: call.ToolDisplay,
		ToolID: call.Connector + " · " + call.Tool, Words: call.End(viewer).Words(), Agent: call.Agent,
		Where: call.ConversationTitle}
	if label, ok := names.connector[call.Connector]; ok {
		r.ToolID = label + " · " + call.Tool
	}
	if r.Where == "" {
		r.Where = call.ConversationID
	}
	switch r.Outcome {
	case approval.OutcomeAllowed, approval.OutcomeApproved:
		r.Tone = "ok"
	case approval.OutcomeRejected, approval.OutcomeDenied:
		r.Tone = "bad"
	default:
		r.Tone = "warn"
	}
	if call.OwnerSubject != viewer.Subject {
		r.Owner = call.OwnerName
	}
	// The request page is its deciders' alone (by default the owner; never
	// the owner of a call a team or a quorum decides): no link to a 404.
	if call.ApprovalID != "" && mayOpen {
		r.RequestURL = "/approvals/" + call.ApprovalID
	}
	if call.GrantID != nil {
		id := strconv.FormatInt(*call.GrantID, 10)
		if call.Revocable(viewer) {
			r.RevokeURL = "/activity/grants/" + id + "/revoke"
		}
		if grantLink {
			r.GrantURL = "/activity?grant=" + id
		}
	}
	return r
}
