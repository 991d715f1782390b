package handlers

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
)

// MaxWait bounds one long-poll request.
const MaxWait = 60 * time.Second

type elicitationJSON struct {
	ID              string                   `json:"id"`
	Type            string                   `json:"type"`
	ElicitationType string                   `json:"elicitation_type"`
	Message         string                   `json:"message"`
	Name            string                   `json:"name"`
	Arguments       approval.ArgumentPreview `json:"arguments"`
}

type approvalJSON struct {
	ID              string          `json:"id"`
	CallID          string          `json:"call_id"`
	Status          string          `json:"status"`
	Scope           string          `json:"scope,omitempty"`
	Code            string          `json:"code,omitempty"`
	Message         string          `json:"message,omitempty"`
	Reason          string          `json:"reason,omitempty"`
	DecidedAt       *time.Time      `json:"decided_at,omitempty"`
	ExpiresAt       time.Time       `json:"expires_at"`
	ExpiresInMS     int64           `json:"expires_in_ms"` // time left by the database's clock
	ArgumentsDigest string          `json:"arguments_digest"`
	URL             string          `json:"url,omitempty"`
	Elicitation     elicitationJSON `json:"elicitation"`
	// Grant, on a claim's answer only: the scoped grant ("Always allow
	// calls like this") the person's approval made, as confirmed; absent
	// for any other answer, or once that grant was revoked.
	Grant *grantJSON `json:"grant,omitempty"`
}

// grantJSON is a scoped grant as the runtime that asked is told it: what
// it covers (the same data the server judges later calls by) and when it
// ends (absent: until revoked).
type grantJSON struct {
	Scope     approval.GrantScope `json:"scope"`
	ExpiresAt *time.Time          `json:"expires_at,omitempty"`
}

// withGrant adds the scoped grant the item's approval made. A failed
// lookup leaves it out: the runtime then knows no more than the scope
// "always", and the grant still answers its later calls.
func (h *Handler) withGrant(ctx context.Context, out approvalJSON, a db.Approval) approvalJSON {
	g, err := h.DB.ConfirmedGrant(ctx, a)
	if err != nil {
		h.Log.ErrorContext(ctx, "reading the confirmed grant failed", "approval_id", a.ID, "err", err)
		return out
	}
	if g != nil {
		out.Grant = &grantJSON{Scope: g.Scope, ExpiresAt: g.ExpiresAt}
	}
	return out
}

func (h *Handler) toApprovalJSON(a db.Approval) approvalJSON {
	out := approvalJSON{ID: a.ID, CallID: a.CallID, Status: string(a.Status), Code: string(a.Code()), Message: a.Message(),
		Reason: a.RejectReason, ExpiresAt: a.ExpiresAt.UTC(), ExpiresInMS: a.ExpiresIn.Milliseconds(), ArgumentsDigest: a.ArgumentsDigest, DecidedAt: a.DecidedAt,
		URL: h.approvalURL(a.ID),
		Elicitation: elicitationJSON{ID: a.ID, Type: "elicitation", ElicitationType: "tool_call_approval",
			Message: "Allow " + a.ToolDisplay + " (" + a.ConnectorDisplay + ") to run?", Name: a.Connector + "." + a.Tool, Arguments: a.Preview}}
	// The parsed command holds the command itself: the API gives the
	// runtime the shortened preview only, never the full text.
	out.Elicitation.Arguments.Shell = nil
	// The scope proposal is the reviewer's, for the inbox only.
	out.Elicitation.Arguments.Scope = nil
	if a.Scope != nil {
		out.Scope = *a.Scope
	}
	if a.DecidedAt != nil {
		t := a.DecidedAt.UTC()
		out.DecidedAt = &t
	}
	return out
}

// approvalURL is the absolute link to an item's page, for runtimes to hand
// to the person who decides; "" when no public URL is configured.
func (h *Handler) approvalURL(id string) string {
	if h.Settings.BaseURL == "" {
		return ""
	}
	return strings.TrimRight(h.Settings.BaseURL, "/") + "/approvals/" + url.PathEscape(id)
}

// parseWait reads ?wait= as a Go duration ("30s") or whole seconds ("30").
func parseWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if len(s) > maxWaitChars {
		return 0, approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "wait must be a duration such as 30s.")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		n, err2 := strconv.Atoi(s)
		if err2 != nil {
			return 0, approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "wait must be a duration such as 30s.")
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 {
		return 0, approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "wait must not be negative.")
	}
	return min(d, MaxWait), nil
}

// APIApprovalGet returns an item; with ?wait= it holds the request until
// the item settles, the wait elapses, or the client goes away. Waiting
// costs no database polling: the process's one LISTEN connection pokes the
// waiter, which then re-reads the row.
func (h *Handler) APIApprovalGet(c echo.Context) error {
	wait, err := parseWait(c.QueryParam("wait"))
	if err != nil {
		return err
	}
	key := *CurrentAPIKey(c)
	id, err := approvalIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var sub *db.Subscription
	var parked *parkedWait
	if wait > 0 && h.Hub != nil {
		// Subscribe before the first read, so a change between the read
		// and the wait still pokes us.
		if c.Request().ProtoMajor == 1 {
			parked = h.subscribeParked(key, id)
		} else {
			sub = h.Hub.Subscribe(db.ApprovalKey(id))
			defer sub.Close()
		}
	}
	a, err := h.DB.ApprovalForKey(ctx, id, key)
	if parked != nil {
		if err == nil && a.Status == approval.StatusPending && parked.park(c, a, wait) {
			return nil // answered on the connection when it settles (park)
		}
		parked.close()
		if err == nil && a.Status == approval.StatusPending {
			// Not parked after all: wait as on HTTP/2.
			sub = h.Hub.Subscribe(db.ApprovalKey(id))
			defer sub.Close()
			a, err = h.DB.ApprovalForKey(ctx, id, key)
		}
	}
	if err != nil {
		return err
	}
	if sub != nil {
		a, err = h.waitSettled(ctx, a, key, sub, wait)
		if ctx.Err() != nil {
			return nil // the runtime went away; nobody to answer
		}
		if err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, h.toApprovalJSON(a))
}

// expirySlack is added to the time an item has left, so that the re-read
// after the timer finds it due; dueRecheck is how long to wait before
// trying again to expire an item that is due but still pending.
const (
	expirySlack = 10 * time.Millisecond
	dueRecheck  = time.Second
)

// waitSettled holds until the item settles, the wait elapses, the runtime
// goes away or the hub closes. How long the item has left comes from the
// database's clock (ExpiresIn), never from this process's clock, which may
// disagree with it; and every turn of the loop either expires the item or
// sleeps, so it never spins.
func (h *Handler) waitSettled(ctx context.Context, a db.Approval, key db.APIKey, sub *db.Subscription, wait time.Duration) (db.Approval, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	triedExpiry := false
	for a.Status == approval.StatusPending {
		if a.ExpiresIn <= 0 && !triedExpiry {
			// Due by the database's clock: expire it now rather than wait
			// for the sweep.
			triedExpiry = true
			if err := h.DB.ExpireIfDue(ctx, a.ID); err != nil {
				return a, err
			}
		} else {
			sleep := a.ExpiresIn + expirySlack
			if a.ExpiresIn <= 0 {
				// Still pending although due: look again in a while.
				sleep, triedExpiry = dueRecheck, false
			}
			if more, err := h.pause(ctx, sub, deadline.C, sleep); !more {
				return a, err
			}
		}
		var err error
		if a, err = h.DB.ApprovalForKey(ctx, a.ID, key); err != nil {
			return a, err
		}
	}
	return a, nil
}

// pause sleeps for d or until the item is poked; it reports false when the
// wait is over (the deadline passed, the hub closed, or ctx ended, which
// returns ctx's error).
func (h *Handler) pause(ctx context.Context, sub *db.Subscription, deadline <-chan time.Time, d time.Duration) (bool, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-sub.C:
	case <-timer.C:
	case <-deadline:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-h.Hub.Closed():
		return false, nil
	}
	return true, nil
}

// digestPattern is an arguments digest as the server writes it.
var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// maxWaitChars bounds ?wait= (docs/openapi.yaml says so too).
const maxWaitChars = 32

type claimBody struct {
	CallID          string `json:"call_id"`
	ArgumentsDigest string `json:"arguments_digest"`
}

// APIApprovalClaim consumes an approved item once, for the call and
// arguments that were shown.
func (h *Handler) APIApprovalClaim(c echo.Context) error {
	id, err := approvalIDParam(c)
	if err != nil {
		return err
	}
	var b claimBody
	if err := decodeJSON(c, &b); err != nil {
		return err
	}
	if err := required([2]string{"call_id", b.CallID}, [2]string{"arguments_digest", b.ArgumentsDigest}); err != nil {
		return err
	}
	if !digestPattern.MatchString(b.ArgumentsDigest) {
		return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, `arguments_digest must be "sha256:" and 64 lower-case hex digits.`)
	}
	a, err := h.DB.Claim(c.Request().Context(), *CurrentAPIKey(c), id, b.CallID, b.ArgumentsDigest)
	if err != nil {
		return err
	}
	// Passkey step-up (issue 33): the answer says how it was approved.
	proof := "session"
	if a.ProofPasskey != "" {
		proof = "passkey"
	}
	// The pre-image hashes were part of what the person approved (issue
	// 41): a runtime compares them with the files it is about to change.
	pre := a.Diff.PreImages()
	if pre == nil {
		pre = []approval.PreImage{}
	}
	return c.JSON(http.StatusOK, claimJSON{approvalJSON: h.withGrant(c.Request().Context(), h.toApprovalJSON(a), a), Proof: proof, DecidedBy: a.DecidedBy,
		WhoDecides: a.Rule().CallWords(a.OwnerTeam), PreImages: pre})
}

// claimJSON is a claim's answer: the item, how it was approved, and who
// approved it (each approver of a quorum, in the order they approved).
type claimJSON struct {
	approvalJSON
	Proof     string   `json:"proof"`
	DecidedBy []string `json:"decided_by"`
	// WhoDecides is who could decide the item, in the card's one wording
	// (approval.DeciderRule.CallWords): the owner, any member of a team
	// key's team, or N of a team (issue 42).
	WhoDecides string `json:"who_decides"`
	// PreImages are the SHA-256 of each file as the runtime read it for the
	// diff the person approved; [] when the item has none.
	PreImages []approval.PreImage `json:"pre_images"`
}

type cancelBody struct {
	User           string `json:"user"`
	ConversationID string `json:"conversation_id"`
	TurnID         string `json:"turn_id"`
}

// APITurnCancel ends a stopped turn's pending items and its approved items
// not claimed yet.
func (h *Handler) APITurnCancel(c echo.Context) error {
	var b cancelBody
	if err := decodeJSON(c, &b); err != nil {
		return err
	}
	if err := required([2]string{"conversation_id", b.ConversationID}, [2]string{"turn_id", b.TurnID}); err != nil {
		return err
	}
	// A team's key may omit user, as in its checks; a person's key may not.
	if key := CurrentAPIKey(c); b.User == "" && key.Team == nil {
		return required([2]string{"user", b.User})
	}
	n, err := h.DB.CancelTurn(c.Request().Context(), *CurrentAPIKey(c), b.User, b.ConversationID, b.TurnID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"cancelled": n})
}
