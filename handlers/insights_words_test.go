package handlers_test

import (
	"net/http"
	"strings"
	"testing"
)

// Without any suggestion the Insights table has no empty column, and the
// page says when a suggestion appears; a phone gets a chart laid out for it.
func TestInsightsSuggestionColumn(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	decide(l.Member, l.pending(t, l.call("calendar", "create_event", `{"i":1}`)), "approve")
	resp, body := admin.Get("/admin/insights")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-testid="insight-row"`) {
		t.Fatal(resp.StatusCode)
	}
	if strings.Contains(body, "<th>Signal</th>") || strings.Contains(body, "<th>Suggestion</th>") {
		t.Error("an empty suggestion column is shown")
	}
	rules := visibleText(body[strings.Index(body, `data-testid="suggestion-rules"`):])
	if !strings.HasPrefix(rules, `data-testid="suggestion-rules">No suggestions in this window. A tool is a “Candidate to loosen” after at least 20 decisions`) {
		t.Errorf("the page does not say when a suggestion appears: %.200s", rules)
	}
	if !strings.Contains(body, `data-testid="insights-chart-narrow"`) {
		t.Error("no chart for phones")
	}
}
