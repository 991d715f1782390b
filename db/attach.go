package db

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// findAttachable finds the item that the same call, made again, joins
// instead of asking twice: created by the same API key for the same owner,
// conversation, tool and argument digest, under the tool's current policy
// version, and either still pending (not due) or approved within the last
// approval timeout and not claimed yet. The call id and the turn id may
// differ — a coding agent gives every retry a new tool-use id and may start
// a new turn. Rejected, expired, cancelled and consumed items are never
// joined: the call then opens a new item.
//
// It is reached only when the decision order has already said "ask a
// person", so it never overrides a block, a deny, the repeated-rejection
// rule or a playbook run. It is opt-in because a plain runtime may mean two
// identical calls as two actions (send the same message twice); joining
// them would run only one.
func findAttachable(ctx context.Context, tx pgx.Tx, key APIKey, req CheckRequest, tool Tool, digest string, timeout time.Duration) (Approval, bool, error) {
	list, err := collectApprovals(tx.Query(ctx, approvalSelect+`
		WHERE a.api_key_id = $1 AND a.owner_subject = $2 AND a.conversation_id = $3 AND a.tool_id = $4
		  AND a.arguments_digest = $5 AND a.policy_version = $6
		  AND ($8 <> 'passkey' OR a.proof_required = 'passkey') -- passkey step-up (issue 33): never join a weaker item
		  AND ((a.status = 'pending' AND a.expires_at > now())
		    OR (a.status = 'approved' AND a.consumed_at IS NULL AND a.decided_at > now() - $7::interval))
		ORDER BY a.status = 'approved' DESC, a.created_at DESC
		LIMIT 1`,
		key.ID, req.User, req.ConversationID, tool.ID, digest, tool.PolicyVersion, timeout, string(req.Proof)))
	if err != nil || len(list) == 0 {
		return Approval{}, false, err
	}
	return list[0], true, nil
}
