package handlers

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
		"conversation_id", "turn_id", "playbook_id", "run_id", "approval_id", "detail", "hash", "proof"})
	n := 0
	err = h.DB.StreamAudit(c.Request().Context(), f, func(l db.AuditLine) error {
		detail, _ := json.Marshal(l.Detail)
		if err := writeRow(cw, strconv.FormatInt(l.ID, 10), strconv.FormatInt(l.Seq, 10), l.At.UTC().Format(time.RFC3339Nano),
			l.ActorKind, l.ActorID, l.ActorName, l.Action, l.Connector, l.Tool, l.ConversationID,
			l.TurnID, l.PlaybookID, l.RunID, l.ApprovalID, string(detail), l.Hash, auditProof(l)); err != nil {
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

// auditProof is the CSV's proof column (issue 33): "passkey" on a decision
// made with a passkey, with its name; empty otherwise.
func auditProof(l db.AuditLine) string {
	if name := auditPasskey(l); name != "" {
		return "passkey: " + name
	}
	return ""
}

// writeRow writes one CSV record with every cell defused: which columns
// can hold text from outside changes over time, so none is trusted.
func writeRow(cw *csv.Writer, cells ...string) error {
	for i, c := range cells {
		cells[i] = cell(c)
	}
	return cw.Write(cells)
}

// formulaStart holds the characters that make a spreadsheet read a cell as
// a formula (or, for tab and carriage return, hide what comes first), with
// the full-width forms some spreadsheets also accept.
const formulaStart = "=+-@\t\r\uff1d\uff0b\uff0d\uff20"

// cell defuses text a spreadsheet would run as a formula, as OWASP advises
// for CSV injection: a cell that starts with one of formulaStart, also after
// leading white space (which spreadsheets may drop), gets a leading
// apostrophe, so it is shown as the text it is.
func cell(s string) string {
	if s == "" {
		return s
	}
	first, _ := utf8.DecodeRuneInString(s)
	trimmed, _ := utf8.DecodeRuneInString(strings.TrimLeftFunc(s, unicode.IsSpace))
	if strings.ContainsRune(formulaStart, first) || strings.ContainsRune(formulaStart, trimmed) {
		return "'" + s
	}
	return s
}
