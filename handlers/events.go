package handlers

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// keepAlive is how often an idle event stream sends a comment, so proxies
// keep it open and a dead client is noticed.
const keepAlive = 25 * time.Second

// Events streams the signed-in user's inbox changes as server-sent events,
// fed by the process's LISTEN fan-out. It first sends the whole pending list
// ("sync") when the page's set differs from the current one (so nothing that
// happened before the stream opened is missed, also after a reconnect), then
// sends
// "new" with a card for each item that appears and "gone" (plus a
// "recent" row) for each that is answered, expires or is cancelled. It
// compares the pending set on every poke instead of trusting single
// notifications, so merged or dropped pokes lose nothing.
//
// With ?with=count the stream also carries "count" (the number of waiting
// calls and their ids, as JSON) at the start and whenever the set changes,
// and "arrived" (id, tool and connector names, never arguments) for each new
// item: for the tab title, the favicon, desktop notifications and a
// request's own page. With ?only=count it carries only those two, so that
// pages other than the inbox stay current without rendering any card.
func (h *Handler) Events(c echo.Context) error {
	if h.Hub == nil {
		return echo.ErrNotFound
	}
	u := CurrentUser(c)
	ctx := c.Request().Context()
	// The person's own items and their teams' wake this stream; what it
	// shows is re-read through the one rule of who may decide (PendingFor).
	teams, err := h.DB.TeamsOf(ctx, u.Subject)
	if err != nil {
		return err
	}
	keys := make([]string, len(teams))
	for i, t := range teams {
		keys[i] = db.TeamKey(t)
	}
	sub := h.Hub.Subscribe(db.OwnerKey(u.Subject), keys...)
	defer sub.Close()
	defer h.followDelegations(c, sub)()

	pending, err := h.DB.PendingFor(ctx, u.Subject)
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(pending))
	for _, a := range pending {
		known[a.ID] = true
	}
	w := c.Response()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	mode := streamMode{countOnly: c.QueryParam("only") == "count", approvals: map[string]int{}}
	for _, a := range pending {
		mode.approvals[a.ID] = a.ApprovalsIn
	}
	mode.counts = mode.countOnly || c.QueryParam("with") == "count"
	if err := h.sendStart(c, pending, mode); err != nil {
		return nil // headers are sent; the browser reconnects
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	recheck := time.NewTicker(sessionRecheck)
	defer recheck.Stop()
	// The session is re-read before anything is sent: a stream must not
	// outlive a sign-out, an expiry or a removed session.
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-h.Hub.Closed():
			return nil
		case <-recheck.C:
			if h.sessionEnded(c) {
				return nil
			}
		case <-tick.C:
			if h.sessionEnded(c) {
				return nil
			}
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			w.Flush()
		case <-sub.C:
			if h.sessionEnded(c) {
				return nil
			}
			if known, err = h.sendChanges(c, known, mode); err != nil {
				if ctx.Err() == nil {
					h.Log.WarnContext(ctx, "event stream", "err", err)
				}
				return nil
			}
		}
	}
}

// sendStart sends what the stream starts with. The list as of subscribing,
// unless the page (or, after a reconnect, the page as first loaded) already
// shows exactly that set: replacing the list would drop a reason being
// typed or a click under way. Every later change arrives in order on this
// same stream, so nothing falls between the page and the stream. Then the
// count, which every page shows in its title.
func (h *Handler) sendStart(c echo.Context, pending []db.Approval, mode streamMode) error {
	w := c.Response()
	if !mode.countOnly && c.QueryParam("have") != pendingKey(pending) {
		list, err := renderString(c, views.StreamSync(h.cards(c, pending)))
		if err != nil {
			return err
		}
		if err := writeEvent(w, "sync", list); err != nil {
			return err
		}
	} else if !mode.counts {
		if _, err := fmt.Fprint(w, ": in sync\n\n"); err != nil {
			return err
		}
		w.Flush()
	}
	if mode.counts {
		return writeCount(w, pending)
	}
	return nil
}

func (h *Handler) sendChanges(c echo.Context, known map[string]bool, mode streamMode) (map[string]bool, error) {
	ctx := c.Request().Context()
	u := CurrentUser(c)
	pending, err := h.DB.PendingFor(ctx, u.Subject)
	if err != nil {
		return known, err
	}
	now := make(map[string]bool, len(pending))
	w := c.Response()
	changed := len(pending) != len(known)
	// In the list's order (by expiry), so that the page appends them in it.
	for _, a := range pending {
		now[a.ID] = true
		if known[a.ID] {
			continue
		}
		changed = true
		if mode.counts {
			if err := writeArrived(w, a); err != nil {
				return known, err
			}
		}
		if mode.countOnly {
			continue
		}
		html, err := renderString(c, views.StreamNew(h.card(c, a)))
		if err != nil {
			return known, err
		}
		if err := writeEvent(w, "new", html); err != nil {
			return known, err
		}
	}
	if changed && mode.counts {
		if err := writeCount(w, pending); err != nil {
			return known, err
		}
	}
	if !mode.countOnly {
		if err := h.sendProgress(c, pending, known, mode.approvals); err != nil {
			return known, err
		}
	}
	if mode.countOnly {
		w.Flush()
		return now, nil
	}
	for id := range known {
		if now[id] {
			continue
		}
		html, err := renderString(c, views.StreamGone(id))
		if err != nil {
			return known, err
		}
		if err := writeEvent(w, "gone", html); err != nil {
			return known, err
		}
		if a, err := h.DB.ApprovalForViewer(ctx, id, u.Subject); err == nil && a.DecidedAt != nil {
			html, err := renderString(c, views.StreamRecent(h.decidedRow(a)))
			if err != nil {
				return known, err
			}
			if err := writeEvent(w, "recent", html); err != nil {
				return known, err
			}
		}
	}
	w.Flush()
	return now, nil
}

// writeEvent writes one server-sent event; data may span lines. A reader
// ends a line at CRLF, at LF and at a lone CR, so data is split on all
// three and each piece sent as its own data line (the browser joins them
// with LF, which HTML reads as it would a CR): nothing in data can end a
// line early, start a field of its own or end the event.
func writeEvent(w *echo.Response, event, data string) error {
	if event == "" || strings.ContainsAny(event, "\r\n") {
		return fmt.Errorf("event stream: invalid event name %q", event)
	}
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	for _, line := range sseLines(data) {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	if _, err := w.Write([]byte(b.String())); err != nil {
		return err
	}
	w.Flush()
	return nil
}

// sseLines splits s at CRLF, LF and lone CR.
func sseLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(s, "\n")
}

func renderString(c echo.Context, comp templ.Component) (string, error) {
	ctx := c.Request().Context()
	if nonce, ok := c.Get(CtxNonce).(string); ok {
		ctx = templ.WithNonce(ctx, nonce)
	}
	var buf bytes.Buffer
	if err := comp.Render(ctx, &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}
