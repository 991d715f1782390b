package handlers

import (
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// ApprovalValue sends the full text of one shortened argument value (the
// n-th key as sent, or "raw" for unreadable arguments) to the item's owner,
// while the item waits: what is approved can always be read in full first.
// The full text is kept only until the item settles, so afterwards — and
// for anyone but the owner, as for a decision — the answer is 404.
func (h *Handler) ApprovalValue(c echo.Context) error {
	u := CurrentUser(c)
	id, err := approvalIDParam(c)
	if err != nil {
		return err
	}
	n, err := pathParam(c, "n")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := h.DB.ApprovalForViewer(ctx, id, u.Subject); err != nil {
		if approval.KindOf(err) == approval.KindNotFound {
			// 404, not 403: don't confirm that someone else's item exists.
			h.Log.WarnContext(ctx, "full value refused: not the owner, or no such item",
				"user_id", u.ID, "subject", u.Subject, "approval_id", id, "ip", c.RealIP())
		}
		return err
	}
	v := views.FullValueView{Page: h.Page(c, "Full value", "inbox"), ID: id}
	args, err := h.DB.FullArguments(ctx, id, u.Subject)
	switch {
	case approval.KindOf(err) == approval.KindNotFound:
		return h.renderValue(c, http.StatusNotFound, v)
	case err != nil:
		return err
	}
	key, value, ok := argumentValue(args, n)
	if !ok {
		return echo.ErrNotFound
	}
	v.Key, v.Value, v.Length, v.Available = key, value, utf8.RuneCountInString(value), true
	// Read in full, a destination may hold a look-alike host that the
	// shortened line did not show: the expanded text warns about each.
	switch {
	case n == "raw":
		v.LookAlike = approval.Preview(args).LookAlike
	case approval.IsDestinationKey(key):
		v.LookAlike = approval.LookAlikeHostsIn(value)
	}
	return h.renderValue(c, http.StatusOK, v)
}

func (h *Handler) renderValue(c echo.Context, status int, v views.FullValueView) error {
	if isHTMX(c) {
		return Render(c, status, views.FullValue(v))
	}
	return Render(c, status, views.FullValuePage(v))
}

// argumentValue picks the value a line of the preview shortened: the n-th
// key in the order sent, or the raw text of the arguments as sent (for
// arguments that could not be read, and for those with more keys than the
// preview shows).
func argumentValue(args approval.Arguments, n string) (string, string, bool) {
	if n == "raw" {
		return "raw", approval.FullText(args.Raw), true
	}
	i, err := strconv.Atoi(n)
	if err != nil || !args.Parsed || i < 0 || i >= len(args.Members) || i >= approval.PreviewMaxLines {
		return "", "", false
	}
	m := args.Members[i]
	return approval.FullText(m.Key), approval.FullValue(m.Value), true
}
