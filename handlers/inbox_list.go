package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// RecentLimit is how many recent decisions the inbox lists.
const RecentLimit = 50

// InboxList shows the signed-in user's pending calls, the one that expires
// first on top, and their recent decisions.
func (h *Handler) InboxList(c echo.Context) error {
	ctx := c.Request().Context()
	u := CurrentUser(c)
	pending, err := h.DB.PendingFor(ctx, u.Subject)
	if err != nil {
		return err
	}
	recent, err := h.DB.RecentDecisionsFor(ctx, u.Subject, RecentLimit)
	if err != nil {
		return err
	}
	v := views.InboxView{Page: h.Page(c, "Inbox", "inbox"), PendingKey: pendingKey(pending)}
	v.Pending = h.cards(c, pending)
	if len(pending) >= db.PendingLimit {
		// The list stops at the limit; say how many wait in all.
		n, err := h.DB.PendingCountFor(ctx, u.Subject)
		if err != nil {
			return err
		}
		v.Waiting = max(n, len(pending))
	}
	for _, a := range recent {
		v.Recent = append(v.Recent, h.decidedRow(a))
	}
	return Render(c, http.StatusOK, views.Inbox(v))
}

func (h *Handler) cards(c echo.Context, list []db.Approval) []views.ApprovalCard {
	out := make([]views.ApprovalCard, 0, len(list))
	for _, a := range list {
		out = append(out, h.card(c, a))
	}
	return out
}

// shownCard is item a's card as far as the item alone says: what the
// reviewer reads of the call (the texts the batch's "seen whole" rule
// reads too), its tool's behaviour and the answers offered.
func (h *Handler) shownCard(a db.Approval) views.ApprovalCard {
	ann := a.Annotations()
	decisions := make([]approval.Decision, 0, len(a.AvailableDecisions))
	for _, d := range a.AvailableDecisions {
		decisions = append(decisions, approval.Decision(d))
	}
	// The badges follow the call where its arguments say better than the
	// tool's hints (one rule for the row, the card and the request page).
	tool := approval.Behaviour{Destructive: ann.Destructive() && !ann.Unknown(), SendsOut: ann.OpenWorld() && !ann.ReadOnly() && !ann.Unknown()}
	call := approval.CallBehaviour(tool, a.Preview, a.Diff)
	return views.ApprovalCard{
		ID: a.ID, ToolDisplay: a.ToolDisplay, ConnectorDisplay: connectorLabel(a.ConnectorKind, a.ConnectorDisplay),
		Connector: a.Connector, Tool: a.Tool,
		ConversationID: a.ConversationID, ConversationTitle: a.ConversationTitle, TurnID: a.TurnID,
		AgentReason: a.AgentReason, Preview: a.Preview, Agent: agentOf(a), Diff: a.Diff, Proof: a.ProofRequired,
		Decisions: decisions, Destructive: call.Destructive, SendsOut: call.SendsOut, ToolWide: tool,
		UnknownBehaviour: ann.Unknown(),
		MaxGrant:         a.MaxGrant(), Durations: approval.GrantDurationsUpTo(a.MaxGrant()),
		CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, Now: h.Now(),
	}
}

func (h *Handler) card(c echo.Context, a db.Approval) views.ApprovalCard {
	card := h.shownCard(a)
	card.CSRFToken, _ = c.Get(CtxCSRF).(string)
	if u := CurrentUser(c); u != nil {
		card.Deciders = h.decidersOf(c.Request().Context(), a, u.Subject)
	}
	like := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s\x00%s", a.APIKeyID, a.Connector, a.Tool, a.ArgumentsDigest)))
	card.LikeKey = hex.EncodeToString(like[:8])
	conv := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s\x00%s\x00%s", a.APIKeyID, a.OwnerSubject, a.ConversationID, a.Connector, a.Tool)))
	card.ConversationToolKey = hex.EncodeToString(conv[:8])
	h.passkeyStep(&card, a) // passkey step-up (issue 33)
	if u := CurrentUser(c); u != nil && card.PasskeyChallenge != "" {
		// No dead end (issue 42): someone with no passkey is told so, and
		// where to add one, rather than offered a prompt that cannot work.
		keys, err := h.DB.PasskeysFor(c.Request().Context(), u.Subject)
		card.NoPasskey = err == nil && len(keys) == 0
	}
	if card.SendsOut {
		card.Destination = views.DestinationOf(a.Preview)
		card.Recipients = views.Recipients(a.Preview)
	}
	h.awayNote(c, a, &card)
	return card
}

func (h *Handler) decidedRow(a db.Approval) views.DecidedRow {
	r := views.DecidedRow{ID: a.ID, ToolDisplay: a.ToolDisplay, ConnectorDisplay: connectorLabel(a.ConnectorKind, a.ConnectorDisplay),
		ConversationID: a.ConversationID, ConversationTitle: a.ConversationTitle, TurnID: a.TurnID, Status: a.Status,
		Reason: a.RejectReason, Note: a.ReviewerNote, CreatedAt: a.CreatedAt, Now: h.Now(), Agent: agentOf(a), Gist: views.Gist(a.Preview)}
	if a.Scope != nil {
		r.Scope = *a.Scope
	}
	if a.DecidedAt != nil {
		r.DecidedAt = *a.DecidedAt
	}
	r.Passkey = a.ProofPasskey // passkey step-up (issue 33)
	return r
}

// agentOf is who asked for item a: its key's name and what its runtime
// said about itself.
func agentOf(a db.Approval) views.AgentView {
	return views.AgentView{KeyName: a.APIKeyName, Client: a.RuntimeClient, Host: a.RuntimeHost, Directory: a.RuntimeDirectory}
}

// connectorLabel shows builtin tools as "System tools".
func connectorLabel(kind, display string) string {
	if kind == "builtin" {
		return "System tools"
	}
	return display
}

// pendingKey names a set of pending items (cards never change once shown,
// so the set of ids is the list). The page passes it to the event stream,
// which re-sends the list only when the set differs.
func pendingKey(list []db.Approval) string {
	ids := make([]string, len(list))
	for i, a := range list {
		ids[i] = a.ID
	}
	sort.Strings(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, ",")))
	return hex.EncodeToString(sum[:8])
}
