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
	// Enough runs that a repeated refusal shows as one line with its
	// count; the page lists the latest recentRunRows lines of them.
	runs, err := h.DB.RecentRuns(ctx, p.ID, recentRunsRead)
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

// How many runs the page reads, and how many lines it shows of them.
const (
	recentRunsRead = 50
	recentRunRows  = 10
)

// runRows shows recent runs with every call they made, and what to do
// about each refusal: a refused start names the playbook's state or each
// tool's lapse; a refused call of a tool no step uses says how to add it to
// the definition. Runs one after the other with the same outcome and no
// calls (ten starts refused because the playbook is disabled) are one line
// with their count, so that the one run that differs is not lost among them.
func runRows(def approval.Definition, runs []db.RunView) []views.RunRow {
	inDefinition := map[approval.Pair]bool{}
	for _, p := range def.Pairs() {
		inDefinition[p] = true
	}
	rows := make([]views.RunRow, 0, recentRunRows)
	last := ""
	for _, r := range runs {
		row := views.RunRow{ID: r.ID, StartedAt: r.StartedAt, EarliestAt: r.StartedAt, Count: 1, RefusedCode: r.RefusedCode}
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
		key := sameOutcome(row)
		if key != "" && key == last {
			prev := &rows[len(rows)-1]
			prev.Count++
			prev.EarliestAt = r.StartedAt // runs come newest first
			continue
		}
		if len(rows) == recentRunRows {
			break
		}
		rows = append(rows, row)
		last = key
	}
	return rows
}

// sameOutcome is what runs that read as one line share: the same refusal
// at start, or no call made. "" for a run with calls, which has its own
// line.
func sameOutcome(r views.RunRow) string {
	if len(r.Calls) > 0 {
		return ""
	}
	key := "refused:" + r.RefusedCode
	for _, p := range r.RefusedPairs {
		key += "\x00" + p.Tool + "\x00" + p.Cause
	}
	return key
}

func pairView(s db.PairState) views.PairView {
	return views.PairView{ToolID: s.ToolID, Tool: s.ToolDisplay, Connector: s.ConnectorDisplay, Steps: strings.Join(s.Steps, ", "),
		Required: s.Required(), Blocked: s.Mode == approval.ModeBlock, Valid: s.Valid, Reason: s.LapseReason}
}
