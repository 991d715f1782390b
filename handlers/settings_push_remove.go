package handlers

import (
	"github.com/labstack/echo/v4"
)

// SettingsPushRemove removes one of the signed-in person's devices.
// Another person's device is a 404, like one that does not exist: the
// page does not say which ids exist.
func (h *Handler) SettingsPushRemove(c echo.Context) error {
	id, err := numberParam(c, "id")
	if err != nil {
		return echo.ErrNotFound
	}
	if err := h.DB.DeletePushSubscription(c.Request().Context(), CurrentUser(c).Subject, id); err != nil {
		return err
	}
	h.flash(c, "Device removed: it receives no more pushes.", false)
	return redirect(c, "/settings")
}
