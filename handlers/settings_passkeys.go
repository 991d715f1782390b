package handlers

import (
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// sessPasskeyRegistration keeps a registration ceremony's state between
// its options and its answer, server-side in the person's session.
const sessPasskeyRegistration = "passkey_registration"

// passkeysPanel is the Passkeys section of /settings.
func (h *Handler) passkeysPanel(c echo.Context, v views.PasskeysView) (templ.Component, error) {
	list, err := h.DB.PasskeysFor(c.Request().Context(), CurrentUser(c).Subject)
	if err != nil {
		return nil, err
	}
	v.CSRFToken, _ = c.Get(CtxCSRF).(string)
	v.Now = h.Now()
	for _, p := range list {
		v.Passkeys = append(v.Passkeys, views.PasskeyRow{ID: p.ID, Name: p.Name, CreatedAt: p.CreatedAt, LastUsedAt: p.LastUsedAt})
	}
	return views.Passkeys(v), nil
}

// SettingsPasskeyOptions starts adding a passkey: the options for the
// browser's navigator.credentials.create, as JSON. The ceremony's state
// stays in the session.
func (h *Handler) SettingsPasskeyOptions(c echo.Context) error {
	u := CurrentUser(c)
	ctx := c.Request().Context()
	rp, err := h.relyingParty()
	if err != nil {
		return err
	}
	list, err := h.DB.PasskeysFor(ctx, u.Subject)
	if err != nil {
		return err
	}
	options, state, err := rp.BeginRegistration(db.PasskeyPerson(*u, list))
	if err != nil {
		return err
	}
	h.Sessions.Put(ctx, sessPasskeyRegistration, string(state))
	return c.JSONBlob(http.StatusOK, options)
}

// SettingsPasskeyAdd finishes adding a passkey: the POST body's name and
// credential (the browser's answer to the options, as JSON). A name that
// is missing or too long, or an answer that does not verify, re-renders
// the settings with the reason (422).
func (h *Handler) SettingsPasskeyAdd(c echo.Context) error {
	u := CurrentUser(c)
	ctx := c.Request().Context()
	req := c.Request()
	name := strings.TrimSpace(req.PostFormValue("name"))
	state := h.Sessions.PopString(ctx, sessPasskeyRegistration)
	fail := func(msg string) error {
		return h.renderSettings(c, http.StatusUnprocessableEntity, views.PasskeysView{Error: msg}, views.AwayForm{}, "")
	}
	switch {
	case name == "" || utf8.RuneCountInString(name) > db.MaxPasskeyName || strings.ContainsRune(name, 0):
		return fail("Give the passkey a name of 1 to 100 characters, then add it again.")
	case state == "" || req.PostFormValue("credential") == "":
		return fail("The passkey was not created: start again with “Add a passkey”.")
	}
	rp, err := h.relyingParty()
	if err != nil {
		return err
	}
	list, err := h.DB.PasskeysFor(ctx, u.Subject)
	if err != nil {
		return err
	}
	cred, err := rp.FinishRegistration(db.PasskeyPerson(*u, list), []byte(state), []byte(req.PostFormValue("credential")))
	if errors.Is(err, passkey.ErrInvalid) {
		h.Log.WarnContext(ctx, "passkey registration refused", "user_id", u.ID, "err", err)
		return fail("The passkey could not be verified (it must check your fingerprint, face or PIN). Nothing was added; try again.")
	}
	if err != nil {
		return err
	}
	if _, err := h.DB.AddPasskey(ctx, *u, name, cred); err != nil {
		if approval.KindOf(err) == approval.KindConflict {
			return fail("That passkey is already registered.")
		}
		return err
	}
	h.flash(c, "Passkey added: “"+views.Marked(name)+"”.", false)
	return redirect(c, "/settings")
}

// SettingsPasskeyRemove removes one of the signed-in person's passkeys.
// Removing the last one while tools require a passkey first asks to
// confirm, naming the tools (the POST body's confirm=yes confirms).
// Another person's passkey is a 404, like one that does not exist.
func (h *Handler) SettingsPasskeyRemove(c echo.Context) error {
	u := CurrentUser(c)
	ctx := c.Request().Context()
	id, err := numberParam(c, "id")
	if err != nil {
		return echo.ErrNotFound
	}
	if c.Request().PostFormValue("confirm") != "yes" {
		list, err := h.DB.PasskeysFor(ctx, u.Subject)
		if err != nil {
			return err
		}
		tools, err := h.DB.ToolsRequiringPasskey(ctx)
		if err != nil {
			return err
		}
		if len(list) == 1 && list[0].ID == id && len(tools) > 0 {
			p := list[0]
			return h.renderSettings(c, http.StatusOK, views.PasskeysView{Tools: tools,
				Confirm: &views.PasskeyRow{ID: p.ID, Name: p.Name, CreatedAt: p.CreatedAt, LastUsedAt: p.LastUsedAt}}, views.AwayForm{}, "")
		}
	}
	if err := h.DB.RemovePasskey(ctx, *u, id); err != nil {
		return err
	}
	h.flash(c, "Passkey removed: it approves nothing from now on.", false)
	return redirect(c, "/settings")
}
