package handlers

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
)

// AuditExport streams the current filter's lines as CSV, newest first, in
// keyset batches: constant memory at any size.
func (h *Handler) AuditExport(c echo.Context) error {
	f, _, err := auditFilter(c.QueryParams())
	if err != nil {
		return err
	}
	f.Before, f.After = 0, 0
	w := c.Response()
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="countersign-audit-`+h.Now().UTC().Format("20060102-150405")+`.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"id", "seq", "at", "actor_kind", "actor_id", "actor_name", "action", "connector", "tool",
		"conversation_id", "turn_id", "playbook_id", "run_id", "approval_id", "detail", "hash"})
	n := 0
	err = h.DB.StreamAudit(c.Request().Context(), f, func(l db.AuditLine) error {
		detail, _ := json.Marshal(l.Detail)
		if err := cw.Write([]string{strconv.FormatInt(l.ID, 10), strconv.FormatInt(l.Seq, 10), l.At.UTC().Format(time.RFC3339Nano),
			l.ActorKind, cell(l.ActorID), cell(l.ActorName), l.Action, cell(l.Connector), cell(l.Tool), cell(l.ConversationID),
			cell(l.TurnID), cell(l.PlaybookID), l.RunID, l.ApprovalID, cell(string(detail)), l.Hash}); err != nil {
			return err
		}
		if n++; n%1000 == 0 {
			cw.Flush()
			w.Flush()
		}
		return cw.Error()
	})
	cw.Flush()
	if err != nil {
		// The header is sent; all we can do is log and end the file early.
		h.Log.ErrorContext(c.Request().Context(), "audit export", "err", err, "rows", n)
	}
	return nil
}

// cell defuses text a spreadsheet would run as a formula.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
