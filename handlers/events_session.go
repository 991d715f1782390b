package handlers

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"
)

// sessionRecheck is how often an open event stream re-reads its session
// when nothing else happens, so a stream ends soon after its session does
// even while the inbox is quiet.
const sessionRecheck = 5 * time.Second

// sessionEnded reports whether the session this request was made under has
// ended since: signed out, expired, removed, or no longer the same user. It
// reads the session store, which every instance shares, so a sign-out on
// one instance ends streams held by another. Any error counts as ended: the
// browser reconnects, and the reconnect is authenticated afresh.
func (h *Handler) sessionEnded(c echo.Context) bool {
	u := CurrentUser(c)
	token := h.Sessions.Token(c.Request().Context())
	if u == nil || token == "" {
		return true
	}
	// A context without this request's session, so that Load reads the
	// store instead of returning the copy loaded when the stream opened.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stop := context.AfterFunc(c.Request().Context(), cancel)
	defer stop()
	sctx, err := h.Sessions.Load(ctx, token)
	if err != nil {
		return true
	}
	return h.Sessions.GetInt64(sctx, SessUserID) != u.ID
}
