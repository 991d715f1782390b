package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// PlaybookEnable enables the owner's playbook; when tools lack approval it
// shows the "Tool use approval" dialog instead (409).
func (h *Handler) PlaybookEnable(c echo.Context) error {
	return h.setPlaybookState(c, "enable", true, nil)
}

// PlaybookDisable disables the owner's playbook.
func (h *Handler) PlaybookDisable(c echo.Context) error {
	none := ""
	return h.setPlaybookState(c, "disable", false, &none)
}

// PlaybookSchedule sets the owner's playbook's schedule (a cron expression,
// validated and shown in words); an empty one clears it.
func (h *Handler) PlaybookSchedule(c echo.Context) error {
	if c.Request().PostFormValue("preview") == "1" {
		return h.schedulePreview(c)
	}
	expr, handled, err := h.formSchedule(c)
	if handled {
		return err
	}
	return h.setPlaybookState(c, "schedule", expr != "", &expr)
}

// formSchedule reads the form's schedule, normalised. One that is not a
// cron expression is answered here (handled): the page again with the
// input and the message, 422, and nothing stored.
func (h *Handler) formSchedule(c echo.Context) (expr string, handled bool, err error) {
	raw := c.Request().PostFormValue("schedule")
	expr, invalid := approval.CheckSchedule(raw)
	if invalid == nil {
		return expr, false, nil
	}
	v, err := h.playbookView(c)
	if err != nil {
		return "", true, err
	}
	v.ScheduleInput, v.ScheduleError = strings.Join(strings.Fields(raw), " "), approval.AsError(invalid).Message
	return "", true, Render(c, http.StatusUnprocessableEntity, views.Playbook(v))
}

// setPlaybookState changes the signed-in owner's playbook; schedule nil
// keeps the current one. Another user's playbook is not found.
func (h *Handler) setPlaybookState(c echo.Context, action string, enabled bool, schedule *string) error {
	u := CurrentUser(c)
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	p, err := h.DB.SetPlaybookState(c.Request().Context(), u.Actor(), u.Subject, id, enabled, schedule)
	var are *db.ApprovalRequiredError
	if errors.As(err, &are) {
		return h.approvalDialog(c, are, action, schedule)
	}
	if err != nil {
		return err
	}
	switch action {
	case "enable":
		h.flash(c, p.Name+" is enabled.", false)
	case "disable":
		h.flash(c, p.Name+" is disabled.", false)
	default:
		if p.Schedule == "" {
			h.flash(c, "Schedule cleared; "+p.Name+" is disabled.", false)
		} else {
			h.flash(c, p.Name+" is scheduled: "+scheduleWords(p.Schedule, h.Now())+".", false)
		}
	}
	return redirect(c, "/playbooks/"+id)
}

// approvalDialog answers 409 with the "Tool use approval" dialog for the
// pairs that lack approval. The dialog's form carries the fingerprint they
// were worked out for, so that approving approves what was shown.
func (h *Handler) approvalDialog(c echo.Context, are *db.ApprovalRequiredError, action string, schedule *string) error {
	v, err := h.playbookView(c)
	if err != nil {
		return err
	}
	v.Dialog = &views.DialogView{Then: action, Fingerprint: are.Fingerprint, Changed: are.Changed}
	if schedule != nil {
		v.Dialog.Schedule = *schedule
	}
	for _, s := range are.Pairs {
		p := pairView(s)
		if p.CannotWhy, err = h.cannotPreapprove(c.Request().Context(), s.ToolID); err != nil {
			return err
		}
		v.Dialog.Pairs = append(v.Dialog.Pairs, p)
	}
	if action == "schedule" {
		v.ScheduleInput = v.Dialog.Schedule
	}
	return Render(c, http.StatusConflict, views.Playbook(v))
}

// PlaybookApprove records the owner's pre-approval of every tool the
// playbook needs, then goes through with the enable or schedule that asked.
// A schedule that is not a cron expression is refused before anything is
// approved or stored.
func (h *Handler) PlaybookApprove(c echo.Context) error {
	then := c.Request().PostFormValue("then")
	var schedule string
	if then == "schedule" {
		expr, handled, err := h.formSchedule(c)
		if handled {
			return err
		}
		schedule = expr
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	_, err = h.DB.PreApprove(c.Request().Context(), *CurrentUser(c), id, c.Request().PostFormValue("fingerprint"))
	var are *db.ApprovalRequiredError
	if errors.As(err, &are) { // the playbook changed since the dialog was drawn
		if then != "schedule" {
			then = "enable"
		}
		return h.approvalDialog(c, are, then, &schedule)
	}
	if e := approval.AsError(err); e != nil && e.Code == db.CodePreapprovalNeedsDeciders {
		// A tool whose rule names others: say who must decide.
		h.flash(c, e.Message, true)
		return redirect(c, "/playbooks/"+url.PathEscape(id))
	}
	if err != nil {
		return err
	}
	switch then {
	case "schedule":
		return h.setPlaybookState(c, "schedule", schedule != "", &schedule)
	case "enable":
		return h.setPlaybookState(c, "enable", true, nil)
	}
	h.flash(c, "Tools approved.", false)
	return redirect(c, "/playbooks/"+url.PathEscape(id))
}
