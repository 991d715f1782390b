package handlers

import (
	"fmt"
	"net/http"
	"time"

	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

var insightWindows = map[string]time.Duration{"7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour, "90d": 90 * 24 * time.Hour}

// Thresholds of the insight signals.
const (
	loosenMinDecisions = 20
	loosenApproveRate  = 0.95
	rerouteMinRequests = 5
	rerouteExpiryRate  = 0.25
)

// InsightsShow shows, per tool over a window, requests, approve / reject /
// expiry rates, time to decision and auto-approvals, as a chart and a table,
// with tools flagged as candidates to loosen or to reroute.
func (h *Handler) InsightsShow(c echo.Context) error {
	window := c.QueryParam("window")
	if _, ok := insightWindows[window]; !ok {
		window = "30d"
	}
	list, err := h.DB.Insights(c.Request().Context(), insightWindows[window])
	if err != nil {
		return err
	}
	v := views.InsightsView{Page: h.Page(c, "Insights", "insights"), Window: window, Windows: []string{"7d", "30d", "90d"},
		Rules: fmt.Sprintf("A tool is a “Candidate to loosen” after at least %d decisions with %.0f%% or more approved, and “Often expires” after at least %d requests with %.0f%% or more expired.",
			loosenMinDecisions, loosenApproveRate*100, rerouteMinRequests, rerouteExpiryRate*100)}
	for _, t := range list {
		r := views.InsightRow{Tool: t.ToolDisplay, Connector: connectorLabel(t.ConnectorKind, t.ConnectorDisplay),
			Requests: t.Requests, Approved: t.Approved, Rejected: t.Rejected, Expired: t.Expired,
			Other:       t.Requests - t.Approved - t.Rejected - t.Expired,
			ApproveRate: rate(t.Approved, t.Requests), RejectRate: rate(t.Rejected, t.Requests), ExpiryRate: rate(t.Expired, t.Requests),
			Median: seconds(t.MedianSeconds), P90: seconds(t.P90Seconds), AutoConversation: t.AutoConversation, AutoAlways: t.AutoAlways}
		r.Loosen = t.Decisions() >= loosenMinDecisions && float64(t.Approved) >= loosenApproveRate*float64(t.Decisions())
		r.Reroute = t.Requests >= rerouteMinRequests && float64(t.Expired) >= rerouteExpiryRate*float64(t.Requests)
		v.Max = max(v.Max, t.Requests)
		v.Rows = append(v.Rows, r)
	}
	return Render(c, http.StatusOK, views.Insights(v))
}

func rate(n, of int) string {
	if of == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f%% (%d)", 100*float64(n)/float64(of), n)
}

func seconds(s *float64) string {
	if s == nil {
		return "—"
	}
	d := time.Duration(*s * float64(time.Second))
	switch {
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}
