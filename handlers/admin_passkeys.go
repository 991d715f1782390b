package handlers

import (
	"net/http"
	"strconv"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// AdminPasskeys lists every person and how many passkeys they have.
func (h *Handler) AdminPasskeys(c echo.Context) error {
	list, err := h.DB.PasskeyHolders(c.Request().Context())
	if err != nil {
		return err
	}
	v := views.AdminPasskeysView{Page: h.Page(c, "Passkeys", "policies"), Now: h.Now()}
	for _, p := range list {
		v.Holders = append(v.Holders, views.PasskeyHolderRow{Subject: p.Subject, Name: p.Name, Email: p.Email,
			Passkeys: p.Passkeys, LastUsedAt: p.LastUsedAt})
	}
	return Render(c, http.StatusOK, views.AdminPasskeys(v))
}

// AdminPasskeysReset removes every passkey of the person the POST body's
// subject names (a lost device), audited with the admin as actor.
func (h *Handler) AdminPasskeysReset(c echo.Context) error {
	subject := c.Request().PostFormValue("subject")
	if subject == "" {
		return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "Choose whose passkeys to reset.")
	}
	n, err := h.DB.ResetPasskeys(c.Request().Context(), CurrentUser(c).Actor(), subject)
	if err != nil {
		return err
	}
	if n == 0 {
		h.flash(c, "That person had no passkey; nothing changed.", false)
	} else {
		h.flash(c, "Passkeys reset: "+itoaPlural(n, "passkey")+" removed. They add new ones on Settings.", false)
	}
	return redirect(c, "/admin/passkeys")
}

func itoaPlural(n int, word string) string {
	s := strconv.Itoa(n) + " " + word
	if n != 1 {
		s += "s"
	}
	return s
}
