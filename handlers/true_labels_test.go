package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestTrueLabels: "Who decides" comes from the same rule as who sees the
// call (issue 42). A team key's call names its team on the card, on its
// claim and on the admins' Pending page, which is in the admin navigation and marked as
// the current page; names in brackets are closed, with no stray space.
func TestTrueLabels(t *testing.T) {
	l := newOrgLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	id := l.deploy(t)

	t.Run("TeamKeyCard", func(t *testing.T) {
		_, body := l.Sam.Get("/approvals/" + id)
		d := nodeText(testIDs(parseHTML(t, body), "deciders")[0])
		if !strings.Contains(d, "any member of platform") || strings.Contains(d, "owner") {
			t.Fatalf("the card says %q", d)
		}
	})
	t.Run("TeamKeyClaim", func(t *testing.T) {
		claimed := l.deploy(t)
		if s, _ := decide(l.Sam, claimed, "approve"); s != http.StatusOK && s != http.StatusSeeOther {
			t.Fatalf("Sam: %d", s)
		}
		var callID, digest string
		if err := l.DB.Pool.QueryRow(context.Background(), `SELECT call_id, arguments_digest FROM approvals WHERE id = $1`, claimed).Scan(&callID, &digest); err != nil {
			t.Fatal(err)
		}
		status, out := l.API(l.TeamKey, http.MethodPost, "/api/v1/approvals/"+claimed+"/claim", map[string]any{"call_id": callID, "arguments_digest": digest})
		if status != http.StatusOK || out["who_decides"] != "any member of platform" || fmt.Sprint(out["decided_by"]) != "[Sam Platform]" {
			t.Fatalf("the team key's claim: %d who_decides %q decided_by %v", status, out["who_decides"], out["decided_by"])
		}
	})
	t.Run("PendingPage", func(t *testing.T) {
		resp, body := admin.Get("/admin/pending")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		var row string
		for _, r := range testIDs(parseHTML(t, body), "overview-row") {
			if attr(r, "data-approval-id") == id {
				row = nodeText(testIDs(r, "overview-deciders")[0])
			}
		}
		if !strings.Contains(row, "any member of platform") || strings.Contains(row, "owner") {
			t.Fatalf("the Pending page says %q", row)
		}
		if strings.Count(row, "(") != strings.Count(row, ")") || !regexp.MustCompile(`\(\S[^()]*\S\)`).MatchString(row) {
			t.Fatalf("unbalanced or spaced brackets: %q", row)
		}
		if !strings.Contains(body, `<a href="/admin/pending" aria-current="page">Pending</a>`) ||
			strings.Contains(body, `<a href="/admin/teams" aria-current="page">`) {
			t.Fatal("the navigation does not list Pending as the current page")
		}
	})
	t.Run("PoliciesListWhoDecides", func(t *testing.T) {
		_, body := admin.Get("/admin/policies")
		var got string
		for _, r := range testIDs(parseHTML(t, body), "policy-row") {
			if attr(r, "data-tool") == "send" {
				got = nodeText(testIDs(r, "policy-deciders")[0]) + " | " + nodeText(testIDs(r, "policy-passkey")[0])
			}
		}
		if !strings.Contains(got, "two of finance") || !strings.Contains(got, "args.amount > 10000") || !strings.HasSuffix(got, "| No") {
			t.Fatalf("the policies list says %q", got)
		}
	})
	t.Run("QuorumApprovers", func(t *testing.T) {
		pay := l.payment(t, 20000)
		if s, _ := decide(l.Finn, pay, "approve"); s != http.StatusOK && s != http.StatusSeeOther {
			t.Fatalf("Finn: %d", s)
		}
		_, body := l.Fiona.Get("/approvals/" + pay)
		got := nodeText(testIDs(parseHTML(t, body), "quorum-approvers")[0])
		if !regexp.MustCompile(`^ ?\(approved by \S[^()]*\S\)$`).MatchString(got) {
			t.Fatalf("approvers %q", got)
		}
	})
}
