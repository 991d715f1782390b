package handlers

import (
	"net/http"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// PlaybookList shows the user's playbooks; admins see everyone's.
func (h *Handler) PlaybookList(c echo.Context) error {
	u := CurrentUser(c)
	list, err := h.DB.ListPlaybooks(c.Request().Context(), u.Subject, u.IsAdmin)
	if err != nil {
		return err
	}
	v := views.PlaybooksView{Page: h.Page(c, "Playbooks", "playbooks"), AllUsers: u.IsAdmin}
	for _, p := range list {
		row := views.PlaybookRow{ID: p.ID, Name: p.Name, Owner: p.OwnerName, IsOwner: p.OwnerSubject == u.Subject,
			Enabled: p.Enabled, ScheduleWords: scheduleWords(p.Schedule, h.Now())}
		for _, s := range p.Pairs {
			if s.Required() {
				row.Required++
			}
			if s.Missing() {
				row.Missing++
			}
		}
		v.Playbooks = append(v.Playbooks, row)
	}
	return Render(c, http.StatusOK, views.Playbooks(v))
}

func scheduleWords(expr string, now time.Time) string {
	if expr == "" {
		return ""
	}
	w, err := approval.ParseSchedule(expr, now)
	if err != nil {
		return "Schedule: " + expr
	}
	return w
}
