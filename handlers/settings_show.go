package handlers

import (
	"net/http"

	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// SettingsShow shows the signed-in person's notification settings.
func (h *Handler) SettingsShow(c echo.Context) error {
	return h.renderSettings(c, http.StatusOK, views.PasskeysView{}, views.AwayForm{}, "")
}

// renderSettings renders /settings with status: its Passkeys section as pk
// says (a confirmation or an error to show), and the "While you're away"
// form's input and why it was refused (away, awayErr), if it was.
func (h *Handler) renderSettings(c echo.Context, status int, pk views.PasskeysView, away views.AwayForm, awayErr string) error {
	u := CurrentUser(c)
	s, err := h.DB.NotificationSettingsFor(c.Request().Context(), u.Subject)
	if err != nil {
		return err
	}
	v := views.SettingsView{Page: h.Page(c, "Settings", "settings"), EmailConfigured: h.Settings.EmailConfigured,
		EmailEnabled: s.EmailEnabled}
	if u.EmailVerified {
		v.Email = u.Email
	}
	if v.Devices, err = h.pushDevices(c); err != nil {
		return err
	}
	if v.Passkeys, err = h.passkeysPanel(c, pk); err != nil { // passkey step-up (issue 33)
		return err
	}
	if v.Teams, err = h.DB.TeamsOf(c.Request().Context(), u.Subject); err != nil {
		return err
	}
	panel, err := h.awayPanel(c, away, awayErr)
	if err != nil {
		return err
	}
	v.Away = views.Away(panel)
	return Render(c, status, views.Settings(v))
}
