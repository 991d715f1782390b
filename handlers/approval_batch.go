package handlers

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// ApprovalBatch decides several pending calls in one step: approve once,
// or reject with one reason. Each item is decided on its own, exactly as if
// it were decided alone — its own conditional UPDATE bound to that item
// (and so to its call id and digest), its own audit line, used once —
// and the lines share a batch id. A batch never gives a standing grant.
// An item decided, cancelled or expired meanwhile, or not the reviewer's,
// is reported in the answer, never skipped silently. Only the POST body's
// fields id (repeated), decision and reason are read.
func (h *Handler) ApprovalBatch(c echo.Context) error {
	u := CurrentUser(c)
	req := c.Request()
	if err := req.ParseForm(); err != nil {
		return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "The form could not be read.")
	}
	dec := approval.Decision(req.PostFormValue("decision"))
	if dec != approval.Approve && dec != approval.Reject {
		return approval.Errorf(approval.KindUnprocessable, approval.CodeNotOffered,
			"A batch approves each call once or rejects them; standing approvals are given one call at a time.")
	}
	ids := dedupe(req.PostForm["id"])
	if len(ids) == 0 || len(ids) > db.PendingLimit {
		return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "Choose between 1 and %d calls.", db.PendingLimit)
	}
	reason := ""
	if dec == approval.Reject {
		reason = req.PostFormValue("reason")
	}
	batchID, err := newBatchID()
	if err != nil {
		return err
	}
	v := views.BatchResultView{BatchID: batchID, Decision: dec}
	for _, id := range ids {
		v.Outcomes = append(v.Outcomes, h.decideInBatch(c, *u, id, db.Answer{Decision: dec, Reason: reason, BatchID: batchID}))
	}
	return Render(c, http.StatusOK, views.BatchResult(v))
}

// decideInBatch decides one item of a batch and says what became of it.
func (h *Handler) decideInBatch(c echo.Context, u db.User, id string, ans db.Answer) views.BatchOutcome {
	ctx := c.Request().Context()
	out := views.BatchOutcome{ID: id}
	var a db.Approval
	var err error = approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such approval.")
	var why string
	if approval.CanonicalUUID(id) {
		a, why, err = h.batchRefusal(ctx, id, u, ans.Decision)
		if why == "" && err == nil {
			a, err = h.DB.Answer(ctx, id, u, ans)
		}
	}
	if a.ID != "" {
		out.ToolDisplay, out.Agent, out.Gist = a.ToolDisplay, agentOf(a).KeyName, views.Gist(a.Preview)
	}
	e := approval.AsError(err)
	switch {
	case why != "":
		out.Words, out.Tone, out.Message = "Not decided — decide it on its own card", "warn", why
	case err == nil && a.Status == approval.StatusPending:
		// One approval of a quorum: recorded, and the call waits for others.
		d := h.decidersOf(ctx, a, u.Subject)
		out.Words, out.Tone, out.Message = "Your approval is in — "+d.Progress(), "ok", "It waits for "+d.StillNeeded()+" from other people."
	case err == nil:
		out.Decided = true
		out.Words, out.Tone = h.decidedRow(a).Outcome()
	case e != nil && e.Kind == approval.KindConflict && a.ID != "":
		row := h.decidedRow(a)
		if e.Code == approval.CodeExpired {
			row.Status = approval.StatusExpired
		}
		label, _ := row.Outcome()
		out.Words, out.Tone, out.Message = "Not decided — "+label, "warn", e.Message
	case e != nil && e.Kind == approval.KindNotFound:
		// 404, not 403, as for one item: the batch does not confirm that
		// someone else's item exists.
		h.Log.WarnContext(ctx, "batch decision refused: not the owner, or no such item", "user_id", u.ID, "approval_id", id, "ip", c.RealIP())
		out.Words, out.Tone, out.Message = "Not decided — not found", "bad", "There is no such call waiting for you."
	case e != nil && e.Code == approval.CodePasskeyRequired:
		// Passkey step-up (issue 33): a batch carries no passkey.
		out.Words, out.Tone, out.Message = "Not decided — needs your passkey", "warn",
			"This call needs your passkey to approve, so it cannot be approved in a batch. Approve it on its own card."
	default:
		// This item's transaction rolled back: it was not decided, and the
		// call does not run unless someone decides it.
		h.Log.ErrorContext(ctx, "batch decision failed", "approval_id", id, "err", err)
		out.Words, out.Tone, out.Message = "Not decided — failed", "bad", "Something went wrong; this call was not decided. Decide it on its own."
	}
	return out
}

// batchRefusal says why a batch may not approve the item ("" when it
// may), by the one rule (approval.BatchRefusal) read from the same card
// texts the inbox row carries: a call with a red flag or a hidden
// character anywhere on its card (its name, the agent's reason), anything
// folded or a passkey step is decided on its own card. Rejecting
// in a batch stays possible. An item the reviewer may not see is not
// found, exactly as when it is decided.
func (h *Handler) batchRefusal(ctx context.Context, id string, u db.User, dec approval.Decision) (db.Approval, string, error) {
	if dec != approval.Approve {
		return db.Approval{}, "", nil
	}
	a, err := h.DB.ApprovalForViewer(ctx, id, u.Subject)
	if err != nil {
		return db.Approval{}, "", err
	}
	if a.Status != approval.StatusPending {
		// Decided, cancelled or expired meanwhile: the decision reports it.
		return a, "", nil
	}
	return a, h.shownCard(a).BatchRefusal(), nil
}

// dedupe keeps the first of each id, in order.
func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// newBatchID is a random UUID (version 4) naming one batch decision.
func newBatchID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("handlers: batch id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
