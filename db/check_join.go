package db

import (
	"context"
	"errors"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// JoinWindow is how long after the first guard's item was decided (or, once
// approved, used) a second guard of the same call may still join it. The
// second guard of a coding agent's call asks within moments of the first
// one's answer (the agent runs the tool, and the MCP gateway in front of it
// checks): a call id sent later than this is not taken as the same call.
const JoinWindow = time.Minute

// joinGuard is invariant 18, "one call, one question": a call that passes
// two Countersign guards — Claude Code's hook and `countersign mcp` in front
// of the MCP server the call goes to, or the other way round — makes one
// item. The second guard's check, when the decision order says "ask a
// person", joins the first guard's item instead of opening another:
//
//   - the same owner (a person, never a team's item), the same call id, the
//     same tool (connector and name, as both guards register it) under the
//     same policy version, and the same arguments digest; a passkey step-up
//     joins only an item that needs a passkey;
//   - asked by the same API key from another conversation (the other
//     guard), or by another key made by the same person — never a key of
//     someone else, a team's key or a key made on the command line;
//   - pending: the second guard gets the same item and waits on it
//     (ApprovalForKey shows it to the joined key; claimJoined lets it claim
//     once);
//   - approved within JoinWindow, claimed by the first guard or not yet:
//     the second guard is allowed now (ViaJoined), once, recorded as its
//     claim;
//   - rejected within JoinWindow: the second guard is denied with the
//     person's answer;
//   - expired, cancelled, older, or already joined by a guard other than
//     this one: no join, and the decision order goes on (a new item: the
//     person is asked).
//
// The join row and its audit lines commit in the check's transaction. It
// runs in checkTx, after the tool's policy is held and before an earlier
// identical item of the same guard is attached (findAttachable); the
// check's fast path sends every guard's check that would ask a person there
// (AttachToPending).
func joinGuard(ctx context.Context, tx pgx.Tx, key APIKey, req CheckRequest, tool Tool, digest string, res *CheckResult) (bool, error) {
	if req.User == "" || req.CallID == "" {
		return false, nil
	}
	list, err := collectApprovals(tx.Query(ctx, approvalSelect+`
		WHERE a.owner_subject = $1 AND (a.call_id = $2 OR a.id = ANY(ARRAY(SELECT c.approval_id FROM approval_call_ids c WHERE c.call_id = $2)))
		  AND a.tool_id = $3 AND a.arguments_digest = $4 AND a.policy_version = $5
		  AND NOT (a.api_key_id = $6 AND a.conversation_id = $7)
		  AND (a.api_key_id = $6 OR EXISTS (SELECT 1 FROM api_keys f, api_keys s
			WHERE f.id = a.api_key_id AND s.id = $6 AND f.created_by = s.created_by
			  AND f.team IS NULL AND s.team IS NULL AND f.revoked_at IS NULL))
		  AND ($8 <> 'passkey' OR a.proof_required = 'passkey')
		  AND ((a.status = 'pending' AND a.expires_at > now())
		    OR (a.status IN ('approved', 'rejected') AND a.decided_at > now() - $9::interval)
		    OR (a.status = 'consumed' AND a.consumed_at > now() - $9::interval))
		ORDER BY a.created_at DESC
		LIMIT 1
		FOR UPDATE OF a`,
		req.User, req.CallID, tool.ID, digest, tool.PolicyVersion, key.ID, req.ConversationID, string(req.Proof), JoinWindow))
	if err != nil || len(list) == 0 {
		return false, err
	}
	a := list[0]
	if a.Status == approval.StatusRejected {
		// The person said no to this very call: every guard of it hears so.
		res.Outcome, res.Approval, res.Message = approval.Outcome{Verdict: approval.Deny, Code: a.Code()}, &a, a.Message()
		return true, nil
	}
	j, found, err := readJoin(ctx, tx, a.ID)
	switch {
	case err != nil:
		return false, err
	case found && (j.KeyID != key.ID || j.ConversationID != req.ConversationID):
		return false, nil // one joining guard per item: a further one asks anew
	case found && j.ClaimedAt != nil:
		return false, nil // this guard used it already: the call sent again asks anew
	}
	var evs []approval.AuditEvent
	if !found {
		if _, err := tx.Exec(ctx, `INSERT INTO approval_joins (approval_id, api_key_id, conversation_id, turn_id, call_id, runtime_client)
			VALUES ($1, $2, $3, $4, $5, $6)`, a.ID, key.ID, req.ConversationID, req.TurnID, req.CallID, req.Runtime.Client); err != nil {
			return false, err
		}
		evs = append(evs, joinAudit(a, key, joinRow{ConversationID: req.ConversationID, TurnID: req.TurnID, CallID: req.CallID, RuntimeClient: req.Runtime.Client}, approval.ActionJoined))
	}
	if a.Status == approval.StatusPending {
		res.Outcome, res.Approval = approval.Outcome{Verdict: approval.Pending}, &a
		return true, RecordAuditMany(ctx, tx, evs)
	}
	// Approved (and perhaps already claimed by the first guard): this
	// guard's use of the approval is its claim, once.
	if _, err := tx.Exec(ctx, `UPDATE approval_joins SET claimed_at = now() WHERE approval_id = $1`, a.ID); err != nil {
		return false, err
	}
	evs = append(evs, joinAudit(a, key, joinRow{ConversationID: req.ConversationID, TurnID: req.TurnID, CallID: req.CallID, RuntimeClient: req.Runtime.Client}, approval.ActionClaimed))
	res.Outcome, res.Approval = approval.Outcome{Verdict: approval.Allow, Via: approval.ViaJoined}, &a
	return true, RecordAuditMany(ctx, tx, evs)
}

// joinedInTurnSQL is, over approvalSelect's row a and CancelTurn's
// arguments ($2 conversation, $3 turn, $4 key), "key's check in that turn
// joined a as its second guard and has not used it": a stopped turn in the
// joining guard's runtime stops the one call both guards hold, so the item
// ends for both (the first guard can no longer claim it either).
const joinedInTurnSQL = `a.id IN (SELECT j.approval_id FROM approval_joins j
	WHERE j.api_key_id = $4 AND j.conversation_id = $2 AND j.turn_id = $3 AND j.claimed_at IS NULL)`

// joinRow is an item's joining guard.
type joinRow struct {
	KeyID                                         int64
	ConversationID, TurnID, CallID, RuntimeClient string
	ClaimedAt                                     *time.Time
}

// readJoin reads item id's joining guard. Every write of it holds the
// item's row first (joinGuard, Claim), so the item's lock orders them.
func readJoin(ctx context.Context, tx pgx.Tx, id string) (joinRow, bool, error) {
	var j joinRow
	err := tx.QueryRow(ctx, `SELECT api_key_id, conversation_id, turn_id, call_id, runtime_client, claimed_at
		FROM approval_joins WHERE approval_id = $1`, id).Scan(&j.KeyID, &j.ConversationID, &j.TurnID, &j.CallID, &j.RuntimeClient, &j.ClaimedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return joinRow{}, false, nil
	}
	return j, err == nil, err
}

// joinAudit is a line about the joining guard's part in item a: the actor
// is its key, the conversation and turn are its own, and the detail names
// it (what the runtime said it is, never argument contents) beside the
// first guard.
func joinAudit(a Approval, key APIKey, j joinRow, action string) approval.AuditEvent {
	d := map[string]any{"agent_key": key.Name, "call_id": j.CallID, "first_guard_key": a.APIKeyName, "second_guard": true}
	if j.CallID != a.CallID {
		d["item_call_id"] = a.CallID
	}
	if j.RuntimeClient != "" {
		d["runtime_client"] = j.RuntimeClient
	}
	if a.RuntimeClient != "" {
		d["first_guard_client"] = a.RuntimeClient
	}
	return approval.AuditEvent{Actor: key.Actor(), Action: action, Connector: a.Connector, Tool: a.Tool,
		ConversationID: j.ConversationID, TurnID: j.TurnID, ApprovalID: a.ID, OwnerSubject: a.OwnerSubject, Detail: d}
}

// joinedView is item a as the key of its joining guard sees it, for the
// guard's wait and claim: found is false unless key joined a (a key that
// only created a reads it as it is). Until the joining guard has used the
// approval, an item its first guard already claimed reads as approved: the
// approval is still this guard's to use once.
func joinedView(ctx context.Context, tx pgx.Tx, a Approval, key APIKey) (Approval, joinRow, bool, error) {
	if a.APIKeyID == key.ID && a.Status != approval.StatusConsumed {
		return a, joinRow{}, false, nil
	}
	j, found, err := readJoin(ctx, tx, a.ID)
	if err != nil || !found || j.KeyID != key.ID {
		return a, joinRow{}, false, err
	}
	if a.Status == approval.StatusConsumed && j.ClaimedAt == nil {
		a.Status, a.ConsumedAt = approval.StatusApproved, nil
	}
	return a, j, true, nil
}

// claimJoined is Claim for the joining guard of item a (the caller holds
// a's row): once, for the call id it joined under (the item's, or one the
// first guard attached) and the same digest, while a is approved or
// consumed by the first guard, and unless an admin blocked the tool since.
// handled is false when key is not a's joining guard (or, for the key that
// also created a, while a is not consumed yet: its own claim comes first).
func claimJoined(ctx context.Context, tx pgx.Tx, key APIKey, a Approval, callID, digest string) (out Approval, handled bool, err error) {
	view, j, found, err := joinedView(ctx, tx, a, key)
	if err != nil || !found {
		return Approval{}, false, err
	}
	blocked, err := toolBlocked(ctx, tx, a.ToolID)
	if err != nil {
		return Approval{}, true, err
	}
	switch {
	case j.ClaimedAt != nil:
		return Approval{}, true, approval.Errorf(approval.KindConflict, approval.CodeConsumed, "This approval was already used; an approval runs one call once.")
	case a.Code() == approval.CodeBlockedByPolicy || blocked:
		return Approval{}, true, approval.Errorf(approval.KindConflict, string(approval.CodeBlockedByPolicy), "%s",
			approval.Message(approval.CodeBlockedByPolicy, approval.MessageInput{Tool: a.ToolDisplay}))
	case view.Status != approval.StatusApproved:
		return Approval{}, true, approval.Errorf(approval.KindConflict, approval.CodeNotApproved, "This call is not approved (%s), so it must not run.", view.Status)
	case j.CallID != callID || a.ArgumentsDigest != digest:
		// The call id is the one this guard joined under: the item's own,
		// or a retry of the call the first guard attached to it.
		return Approval{}, true, approval.Errorf(approval.KindConflict, approval.CodeCallMismatch, "The approval was given for a different call or different arguments, so this call must not run.")
	}
	if _, err := tx.Exec(ctx, `UPDATE approval_joins SET claimed_at = now() WHERE approval_id = $1 AND claimed_at IS NULL`, a.ID); err != nil {
		return Approval{}, true, err
	}
	ev := joinAudit(a, key, j, approval.ActionClaimed)
	if err := RecordAudit(ctx, tx, ev); err != nil {
		return Approval{}, true, err
	}
	a.Status = approval.StatusConsumed
	if a.DecidedBy, err = decidedBy(ctx, tx, a); err != nil {
		return Approval{}, true, err
	}
	return a, true, nil
}

// noteAttachedCall records the call id of the first guard's identical call
// that attached to item a (findAttachable) when it is not a's own: the
// second guard of that call asks with this id (see joinGuard).
func noteAttachedCall(ctx context.Context, tx pgx.Tx, a Approval, callID string) error {
	if callID == "" || callID == a.CallID {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO approval_call_ids (approval_id, call_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, a.ID, callID)
	return err
}
