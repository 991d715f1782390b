package handlers

import (
	"net/http"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// schedulePreview shows the playbook's page with the typed schedule's next
// three run times, or why it is not a schedule. It stores nothing: the
// schedule form's field asks for it on change (htmx swaps the preview in),
// and the form's "Show next runs" button does without script.
func (h *Handler) schedulePreview(c echo.Context) error {
	v, err := h.playbookView(c)
	if err != nil {
		return err
	}
	raw := c.Request().PostFormValue("schedule")
	v.ScheduleInput, v.ScheduleNext = strings.Join(strings.Fields(raw), " "), nil
	if v.ScheduleInput == "" {
		return Render(c, http.StatusOK, views.Playbook(v))
	}
	next, invalid := approval.NextRuns(raw, h.Now(), 3)
	if invalid != nil {
		v.ScheduleError = approval.AsError(invalid).Message
		return Render(c, http.StatusUnprocessableEntity, views.Playbook(v))
	}
	v.ScheduleNext = next
	return Render(c, http.StatusOK, views.Playbook(v))
}
