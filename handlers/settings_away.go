package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// awayPanel builds the "While you're away" section of /settings for the
// signed-in person, with form and msg when a delegation was refused.
func (h *Handler) awayPanel(c echo.Context, form views.AwayForm, msg string) (views.AwayPanel, error) {
	ctx, u := c.Request().Context(), CurrentUser(c)
	v := views.AwayPanel{Now: h.Now(), Form: form, Error: msg, IsAdmin: u.IsAdmin}
	v.CSRFToken, _ = c.Get(CtxCSRF).(string)
	cur, ok, err := h.DB.DelegationOf(ctx, u.ID)
	if err != nil {
		return v, err
	}
	if ok {
		row := delegationRow(cur)
		v.Current = &row
	}
	to, err := h.DB.DelegationsTo(ctx, u.ID)
	if err != nil {
		return v, err
	}
	for _, d := range to {
		v.For = append(v.For, delegationRow(d))
	}
	return v, nil
}

func delegationRow(d db.Delegation) views.DelegationRow {
	return views.DelegationRow{ID: d.ID, PersonName: d.PersonName, DelegateName: d.DelegateName, EndsAt: d.EndsAt,
		EndedAt: d.EndedAt, EndedBy: d.EndedBy, Active: d.Active}
}

// SettingsAwayStart names the signed-in person's delegate until a time. A
// refused delegation (nobody by that address, oneself, an end in the past
// or too far ahead) re-renders Settings with the input and why (422).
func (h *Handler) SettingsAwayStart(c echo.Context) error {
	r := c.Request()
	form := views.AwayForm{DelegateEmail: strings.TrimSpace(r.PostFormValue("delegate_email")), Until: strings.TrimSpace(r.PostFormValue("until"))}
	until, ok := delegationEnd(form.Until, r.PostFormValue("tz_offset"))
	if !ok || form.DelegateEmail == "" {
		return h.renderSettings(c, http.StatusUnprocessableEntity, views.PasskeysView{}, form, "Give your delegate’s email address and the date and time it ends.")
	}
	d, err := h.DB.StartDelegation(r.Context(), *CurrentUser(c), form.DelegateEmail, until)
	if e := approval.AsError(err); e != nil && e.Kind == approval.KindUnprocessable {
		return h.renderSettings(c, http.StatusUnprocessableEntity, views.PasskeysView{}, form, e.Message)
	}
	if err != nil {
		return err
	}
	h.flash(c, d.DelegateName+" decides for you until "+d.EndsAt.UTC().Format("Mon 2 Jan, 15:04 UTC")+".", false)
	return redirect(c, "/settings")
}

// SettingsAwayEnd ends the signed-in person's own delegation early.
func (h *Handler) SettingsAwayEnd(c echo.Context) error {
	id, err := numberParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.DB.EndDelegation(c.Request().Context(), *CurrentUser(c), id, false); err != nil {
		return err
	}
	h.flash(c, "Your delegation has ended: you decide your calls alone again.", false)
	return redirect(c, "/settings")
}

// delegationEnd reads the form's end time: a datetime-local value in the
// browser's time zone, whose offset from UTC in minutes (as JavaScript's
// getTimezoneOffset gives it: positive west of Greenwich) the form sends
// along; without it, UTC.
func delegationEnd(value, offset string) (time.Time, bool) {
	mins, err := strconv.Atoi(strings.TrimSpace(offset))
	if err != nil || mins < -18*60 || mins > 18*60 {
		mins = 0
	}
	zone := time.FixedZone("", -mins*60)
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, value, zone); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
