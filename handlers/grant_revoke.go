package handlers

import (
	"fmt"

	"github.com/labstack/echo/v4"
)

// GrantRevoke revokes one of the user's grants; the very next call asks
// again. Another user's grant is not found.
func (h *Handler) GrantRevoke(c echo.Context) error {
	id, err := numberParam(c, "grant")
	if err != nil {
		return echo.ErrNotFound
	}
	if err := h.DB.RevokeGrant(c.Request().Context(), *CurrentUser(c), id); err != nil {
		return err
	}
	h.flash(c, "Revoked. You will be asked again next time.", false)
	return redirect(c, "/auto-approve")
}

// GrantClear removes one of the user's lapsed grants from the list (an
// ended one included); it applied to nothing any more.
func (h *Handler) GrantClear(c echo.Context) error {
	id, err := numberParam(c, "grant")
	if err != nil {
		return echo.ErrNotFound
	}
	if err := h.DB.ClearLapsedGrant(c.Request().Context(), *CurrentUser(c), id); err != nil {
		return err
	}
	h.flash(c, "Cleared.", false)
	return redirect(c, "/auto-approve")
}

// GrantRevokeConnector revokes all of the user's grants for a connector.
func (h *Handler) GrantRevokeConnector(c echo.Context) error {
	connector, err := pathParam(c, "connector")
	if err != nil {
		return err
	}
	n, err := h.DB.RevokeConnectorGrants(c.Request().Context(), *CurrentUser(c), connector)
	if err != nil {
		return err
	}
	h.flash(c, fmt.Sprintf("Revoked %d %s.", n, pluralWord(n, "grant")), false)
	return redirect(c, "/auto-approve")
}

// GrantClearLapsed removes the user's grants that no longer apply.
func (h *Handler) GrantClearLapsed(c echo.Context) error {
	n, err := h.DB.ClearLapsedGrants(c.Request().Context(), *CurrentUser(c))
	if err != nil {
		return err
	}
	h.flash(c, fmt.Sprintf("Cleared %d lapsed %s.", n, pluralWord(n, "grant")), false)
	return redirect(c, "/auto-approve")
}

func pluralWord(n int, w string) string {
	if n == 1 {
		return w
	}
	return w + "s"
}
