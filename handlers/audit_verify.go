package handlers

import (
	"net/http"

	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// AuditVerify walks the audit chain and shows whether it is intact, or
// where it first breaks.
func (h *Handler) AuditVerify(c echo.Context) error {
	r, err := h.DB.VerifyAudit(c.Request().Context())
	if err != nil {
		return err
	}
	return Render(c, http.StatusOK, views.Chain(views.ChainView{Page: h.Page(c, "Audit chain", "audit"), Intact: r.Intact, Summary: r.String()}))
}
