package handlers

import (
	"net/http"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// PlaybookShow shows a playbook: its tools and their pre-approvals (with
// why a lapsed one lapsed), its steps in order, and recent runs with every
// call they made. Owners and admins only; others get 404.
func (h *Handler) PlaybookShow(c echo.Context) error {
	v, err := h.playbookView(c)
	if err != nil {
		return err
	}
	return Render(c, http.StatusOK, views.Playbook(v))
}

func (h *Handler) playbookView(c echo.Context) (views.PlaybookView, error) {
	ctx := c.Request().Context()
	u := CurrentUser(c)
	id, err := pathParam(c, "id")
	if err != nil {
		return views.PlaybookView{}, err
	}
	p, pairs, err := h.DB.PlaybookWithPairs(ctx, id)
	if err != nil {
		return views.PlaybookView{}, err
	}
	if p.OwnerSubject != u.Subject && !u.IsAdmin {
		return views.PlaybookView{}, approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such playbook.")
	}
	runs, err := h.DB.RecentRuns(ctx, p.ID, 10)
	if err != nil {
		return views.PlaybookView{}, err
	}
	v := views.PlaybookView{Page: h.Page(c, p.Name, "playbooks"), ID: p.ID, Name: p.Name, Owner: p.OwnerName,
		IsOwner: p.OwnerSubject == u.Subject, Enabled: p.Enabled, Schedule: p.Schedule, ScheduleInput: p.Schedule,
		ScheduleWords: scheduleWords(p.Schedule, h.Now()), Now: h.Now()}
	v.ScheduleNext, _ = approval.NextRuns(p.Schedule, h.Now(), 3) // none for no schedule
	for _, s := range p.Definition.Steps {
		sv := views.StepView{Title: s.Title, WorkType: s.WorkType.ID + " v" + s.WorkType.Version}
		for _, t := range s.Tools {
			sv.Tools = append(sv.Tools, t.String())
		}
		v.Steps = append(v.Steps, sv)
	}
	for _, s := range pairs {
		v.Pairs = append(v.Pairs, pairView(s))
		v.NeedsApproval = v.NeedsApproval || s.Missing()
	}
	v.Runs = runRows(p.Definition, runs)
	return v, nil
}

// runRows shows recent runs with every call they made, and what to do
// about each refusal: a refused
// start names the playbook's state or each tool's lapse; a refused call of
// a tool no step uses says how to add it to the definition.
func runRows(def approval.Definition, runs []db.RunView) []views.RunRow {
	inDefinition := map[approval.Pair]bool{}
	for _, p := range def.Pairs() {
		inDefinition[p] = true
	}
	rows := make([]views.RunRow, 0, len(runs))
	for _, r := range runs {
		row := views.RunRow{ID: r.ID, StartedAt: r.StartedAt, RefusedCode: r.RefusedCode}
		for _, p := range r.RefusedPairs {
			sr := views.StartRefusalRow{Tool: p.Label}
			if p.Reason != "" {
				sr.Cause = approval.LapseCause(p.Reason)
			}
			row.RefusedPairs = append(row.RefusedPairs, sr)
		}
		for _, f := range r.Calls {
			row.Calls = append(row.Calls, views.RunCallRow{Allowed: f.Allowed(), ByPolicy: f.Code == db.RunCallAllowedByPolicy,
				RefusalRow: views.RefusalRow{Tool: f.Label, CallID: f.CallID, Code: f.Code,
					Pair: f.Pair.String(), OutsideDefinition: !inDefinition[f.Pair]}})
		}
		rows = append(rows, row)
	}
	return rows
}

func pairView(s db.PairState) views.PairView {
	return views.PairView{ToolID: s.ToolID, Tool: s.ToolDisplay, Connector: s.ConnectorDisplay, Steps: strings.Join(s.Steps, ", "),
		Required: s.Required(), Blocked: s.Mode == approval.ModeBlock, Valid: s.Valid, Reason: s.LapseReason}
}
