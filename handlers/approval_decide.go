package handlers

import (
	"net/http"
	"net/url"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// ApprovalDecide records the signed-in reviewer's answer. Only the POST
// body's fields decision, reason, duration, scope and assertion are read (plus the CSRF
// token, checked by middleware), never the URL's query: the reviewer comes from the
// session, and the call itself — tool, arguments, state — is what the
// server stored, never what the browser sends.
func (h *Handler) ApprovalDecide(c echo.Context) error {
	u := CurrentUser(c)
	id, err := approvalIDParam(c)
	if err != nil {
		return err
	}
	req := c.Request()
	ans := db.Answer{Decision: approval.Decision(req.PostFormValue("decision")), Reason: req.PostFormValue("reason"),
		Duration: req.PostFormValue("duration")}
	// Passkey step-up (issue 33): the WebAuthn assertion, checked by
	// DB.Answer where the item needs one.
	if assertion := req.PostFormValue("assertion"); assertion != "" {
		if ans.RP, err = h.relyingParty(); err != nil {
			return err
		}
		ans.Assertion = []byte(assertion)
	}
	if ans.Decision == approval.AlwaysMatching {
		// The choices within the scope the server proposes; the server
		// builds the scope itself from the call as stored.
		ans.Scope = req.PostForm["scope"]
	}
	a, err := h.DB.Answer(req.Context(), id, *u, ans)
	if err != nil {
		if approval.KindOf(err) == approval.KindNotFound {
			// 404, not 403: don't confirm that someone else's item exists.
			h.Log.WarnContext(req.Context(), "decision refused: not the owner, or no such item",
				"user_id", u.ID, "subject", u.Subject, "approval_id", id, "ip", c.RealIP())
		}
		if e := approval.AsError(err); e != nil && e.Kind == approval.KindConflict && a.ID != "" {
			return h.lateDecision(c, a, e)
		}
		return err
	}
	if a.Status == approval.StatusPending {
		// One approval of a quorum: the call still waits for others. The
		// card stays, saying how far it got, without the buttons.
		if isHTMX(c) {
			return Render(c, http.StatusOK, views.Card(h.card(c, a)))
		}
		d := h.decidersOf(req.Context(), a, u.Subject)
		h.flash(c, "Your approval is in ("+d.Progress()+"). "+a.ToolDisplay+" waits for "+d.StillNeeded()+".", false)
		return redirect(c, decidedFrom(c, id))
	}
	row := h.decidedRow(a)
	if isHTMX(c) {
		return Render(c, http.StatusOK, views.Decided(row))
	}
	label, _ := row.Outcome()
	h.flash(c, label+": "+a.ToolDisplay+". The agent has its answer.", false)
	return redirect(c, decidedFrom(c, id))
}

// decidedFrom is where a decision made without script returns: to the
// request's own page when it was made there (the Referer, sent same-origin
// only, says so), else to the inbox. Only that exact path is honoured.
func decidedFrom(c echo.Context, id string) string {
	page := "/approvals/" + id
	if ref, err := url.Parse(c.Request().Referer()); err == nil && ref.Path == page && ref.Host == c.Request().Host {
		return page
	}
	return "/"
}

// lateDecision answers a decision that lost (409): the card, or the page,
// says what actually became of the item, as read after the decision failed.
func (h *Handler) lateDecision(c echo.Context, a db.Approval, e *approval.Error) error {
	row := h.decidedRow(a)
	heading := "Already answered"
	switch {
	case e.Code == approval.CodeExpired:
		// Due but not yet swept: it is expired all the same.
		row.Status, heading = approval.StatusExpired, "This request expired"
	case a.Status == approval.StatusCancelled:
		heading = "This request was cancelled"
	}
	if isHTMX(c) {
		return Render(c, http.StatusConflict, views.LateDecision(row, e.Code, e.Message))
	}
	// Without script the page says which call, as the card does.
	which := "Your answer to “" + views.Marked(a.ToolDisplay) + "” (conversation " + views.Marked(conversationLabel(a)) +
		", asked " + views.Absolute(a.CreatedAt) + ") was not recorded. "
	return Render(c, http.StatusConflict, views.ErrorPage(h.Page(c, heading, ""), http.StatusConflict, heading, which+e.Message))
}

// conversationLabel is the runtime's label for the item's conversation, or
// its id.
func conversationLabel(a db.Approval) string {
	if a.ConversationTitle != "" {
		return a.ConversationTitle
	}
	return a.ConversationID
}
