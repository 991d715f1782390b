package handlers

import (
	"net/http"

	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// AdminDelegationsList shows admins every delegation that holds now, with
// a button to end each, and the ones that ended lately.
func (h *Handler) AdminDelegationsList(c echo.Context) error {
	open, ended, err := h.DB.AllDelegations(c.Request().Context())
	if err != nil {
		return err
	}
	v := views.AdminDelegationsView{Page: h.Page(c, "Delegations", "delegations"), Now: h.Now()}
	for _, d := range open {
		v.Open = append(v.Open, delegationRow(d))
	}
	for _, d := range ended {
		v.Ended = append(v.Ended, delegationRow(d))
	}
	return Render(c, http.StatusOK, views.AdminDelegations(v))
}

// AdminDelegationEnd ends anyone's delegation (audited with the admin as
// actor).
func (h *Handler) AdminDelegationEnd(c echo.Context) error {
	id, err := numberParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.DB.EndDelegation(c.Request().Context(), *CurrentUser(c), id, true); err != nil {
		return err
	}
	h.flash(c, "The delegation has ended.", false)
	return redirect(c, "/admin/delegations")
}
