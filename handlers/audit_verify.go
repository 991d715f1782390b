package handlers

import (
	"net/http"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// AuditVerify walks the audit chain and shows whether it is intact, or
// where it first breaks — checked against every signed checkpoint when
// this server signs them, so that a rewrite with recomputed hashes is
// caught here too.
func (h *Handler) AuditVerify(c echo.Context) error {
	ctx := c.Request().Context()
	key := h.Settings.AuditPublicKey
	var r db.ChainReport
	var err error
	if key != nil {
		r, err = h.DB.VerifyAuditSigned(ctx, key)
	} else {
		r, err = h.DB.VerifyAudit(ctx)
	}
	if err != nil {
		return err
	}
	v := views.ChainView{Page: h.Page(c, "Audit chain", "audit"), Intact: r.Intact, Summary: r.String()}
	if key != nil {
		v.KeyID = db.KeyID(key)
	}
	return Render(c, http.StatusOK, views.Chain(v))
}
