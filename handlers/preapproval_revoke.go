package handlers

import (
	"net/url"

	"github.com/labstack/echo/v4"
)

// PreApprovalRevoke ends the owner's pre-approval of one tool; the next run
// is refused until it is approved again.
func (h *Handler) PreApprovalRevoke(c echo.Context) error {
	toolID, err := numberParam(c, "tool")
	if err != nil {
		return echo.ErrNotFound
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.DB.RevokePreApproval(c.Request().Context(), *CurrentUser(c), id, toolID); err != nil {
		return err
	}
	h.flash(c, "Pre-approval revoked. Runs will be refused this tool until you approve it again.", false)
	return redirect(c, "/playbooks/"+url.PathEscape(id))
}
