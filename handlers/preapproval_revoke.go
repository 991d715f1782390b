package handlers

import (
	"strconv"

	"github.com/labstack/echo/v4"
)

// PreApprovalRevoke ends the owner's pre-approval of one tool; the next run
// is refused until it is approved again.
func (h *Handler) PreApprovalRevoke(c echo.Context) error {
	toolID, err := strconv.ParseInt(c.Param("tool"), 10, 64)
	if err != nil {
		return echo.ErrNotFound
	}
	if err := h.DB.RevokePreApproval(c.Request().Context(), *CurrentUser(c), c.Param("id"), toolID); err != nil {
		return err
	}
	h.flash(c, "Pre-approval revoked. Runs will be refused this tool until you approve it again.", false)
	return redirect(c, "/playbooks/"+c.Param("id"))
}
