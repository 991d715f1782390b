package db

// What the check reads (steps 1 and 2 of check_engine.go): the statement
// that authenticates the key and loads the tool and the turn's facts, and
// the reads of the check's transaction.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// turnFactsSQL reads what the decision order needs beyond the tool's
// policy: the rejections of these arguments in this turn since their last
// approval (expiries do not count); the newest valid standing grant for
// this conversation and for every conversation — not revoked, given under
// the policy version read, not past its end, and only while the tool offers
// standing approval; and whether the very call (same key, call id and
// arguments) has an item a retry must get rather than a second prompt:
// approved and not yet used, or ended without running (rejected, expired,
// cancelled). The user's scoped grants for the tool come in the same scan
// of the user's grants, as one JSON array (NULL when there are none — the
// common case costs nothing more): whether one covers the call is for
// approval.GrantScope.Covers to say, never SQL. $1 user, $2 conversation,
// $3 turn, $4 the arguments' digest, $5 tool id, $6 policy version, $7
// standing approval offered, $8 API key id, $9 call id, $10 "Always allow
// calls like this" offered where standing approval is not (as turnFactsSQL
// names them; keyToolFactsGroupSQL fills them from its own rows).
const turnFactsTemplate = `SELECT (SELECT count(*) FROM approvals r
		WHERE r.owner_subject = {user} AND r.conversation_id = {conv} AND r.turn_id = {turn} AND r.tool_id = {tool}
		  AND r.arguments_digest = {digest} AND r.status = 'rejected'
		  AND r.decided_at > COALESCE((SELECT max(p.decided_at) FROM approvals p
			WHERE p.owner_subject = {user} AND p.conversation_id = {conv} AND p.turn_id = {turn} AND p.tool_id = {tool}
			  AND p.arguments_digest = {digest} AND p.status IN ('approved', 'consumed')), '-infinity')) AS rejections,
	g.conversation_grant, g.always_grant, g.scoped_grants,
	EXISTS (SELECT 1 FROM approvals a WHERE a.api_key_id = {key} AND a.owner_subject = {user} AND a.conversation_id = {conv}
		AND a.turn_id = {turn} AND a.call_id = {call} AND a.tool_id = {tool} AND a.arguments_digest = {digest}
		AND a.status IN ('approved', 'rejected', 'expired', 'cancelled')) AS same_call
	FROM (SELECT max(id) FILTER (WHERE conversation_id = {conv} AND scope IS NULL AND {standing}) AS conversation_grant,
			max(id) FILTER (WHERE conversation_id IS NULL AND scope IS NULL AND {standing}) AS always_grant,
			jsonb_agg(jsonb_build_object('id', id, 'scope', scope) ORDER BY id) FILTER (WHERE scope IS NOT NULL) AS scoped_grants
		FROM standing_grants WHERE user_subject = {user} AND tool_id = {tool} AND revoked_at IS NULL AND policy_version = {version}
		  AND ({standing} OR {matchable})
		  AND (conversation_id IS NULL OR conversation_id = {conv}) AND (expires_at IS NULL OR expires_at > now())) g`

// turnFactsSQL is turnFactsTemplate on its own: $1 user, $2 conversation,
// $3 turn, $4 the arguments' digest, $5 tool id, $6 policy version, $7
// standing approval offered, $8 API key id, $9 call id, $10 matchable.
var turnFactsSQL = strings.NewReplacer("{user}", "$1", "{conv}", "$2", "{turn}", "$3", "{digest}", "$4", "{tool}", "$5",
	"{version}", "$6", "{standing}", "$7", "{key}", "$8", "{call}", "$9", "{matchable}", "$10").Replace(turnFactsTemplate)

// turnFacts is what turnFactsSQL reads.
type turnFacts struct {
	Rejections        int    `db:"rejections"`
	ConversationGrant *int64 `db:"conversation_grant"`
	AlwaysGrant       *int64 `db:"always_grant"`
	// Scoped are the user's valid scoped grants for the tool (nil: none),
	// and ScopedMatch the first of them that covers the call (see match).
	Scoped      []scopedGrant `db:"scoped_grants"`
	ScopedMatch *scopedGrant  `db:"-"`
	SameCall    bool          `db:"same_call"`
}

// scopedGrant is one scoped grant as turnFactsSQL reads it.
type scopedGrant struct {
	ID    int64               `json:"id"`
	Scope approval.GrantScope `json:"scope"`
}

// match finds the first scoped grant that covers the call (a pure
// function of the scope and the arguments) and returns the check's input
// with it.
func (f *turnFacts) match(in approval.CheckInput, args approval.Arguments) approval.CheckInput {
	in.RejectionsThisTurn, in.ConversationGrant, in.AlwaysGrant = f.Rejections, f.ConversationGrant != nil, f.AlwaysGrant != nil
	f.ScopedMatch = nil
	for i := range f.Scoped {
		if f.Scoped[i].Scope.Covers(args) {
			f.ScopedMatch = &f.Scoped[i]
			break
		}
	}
	in.ScopedGrant = f.ScopedMatch != nil
	return in
}

// checkToolSQL reads the tool of a check outside a playbook run — known,
// not retired, its connector not deleted — unless the same call sent by the
// same key is already pending. $1 connector, $2 tool, $3 API key id, $4
// user, $5 conversation, $6 turn, $7 call id, $8 the arguments' digest.
const checkToolSQL = toolSelect + `
	WHERE t.connector = $1 AND t.name = $2 AND t.retired_at IS NULL AND c.deleted_at IS NULL
	  AND NOT EXISTS (SELECT 1 FROM approvals a
		WHERE a.api_key_id = $3 AND a.owner_subject = $4 AND a.conversation_id = $5 AND a.turn_id = $6
		  AND a.call_id = $7 AND a.tool_id = t.id AND a.arguments_digest = $8 AND a.status = 'pending' AND a.expires_at > now())`

// toolColumns are toolSelect's columns by their own names, as a statement
// built over it (c) reads them back.
const toolColumns = `id, connector, name, display_name, description, read_only_hint, destructive_hint, idempotent_hint,
	open_world_hint, mode, standing_approval, condition, policy_version, max_grant_seconds, retired_at, connector_display,
	connector_kind, connector_deleted, shell_argument, matchable, proof, proof_condition,
	deciders, decider_team, quorum, deciders_condition`

// policyAllowLine is the part of a check's first statement that writes the
// audit line of every call it read whose tool's mode is allow: such a
// call is allowed by Evaluate from the tool's row alone, so its line is
// written by the very statement that read it — no second round trip. The
// statement reads its rows into c (the tool's columns by their names, no
// row or NULL columns for no tool); keyID, keyName, owner, conv, turn and
// call are expressions over c or the statement's parameters. The line has
// policyAllowDetail's keys. Its transaction commits as every other does,
// waiting for the WAL flush, before any check it read is answered: a call
// that ran has its line (invariant 19), whatever happens to Postgres after
// the answer. The checks read together (keyToolGroupSQL) share that one
// commit — the group commit of the allow path. A call whose condition was
// false is recorded by the group writer (outcomeRecord).
//
// A person's key that names no user is refused after the read
// (errUserRequired), so no line is written for it: team is the key's team
// (NULL for a person's key).
func policyAllowLine(keyID, keyName, team, owner, conv, turn, call string) string {
	return `policy_allowed AS (INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool,
		conversation_id, turn_id, detail, owner_subject)
	SELECT '` + approval.ActorAPIKey + `', ` + keyID + `::text, ` + keyName + `, '` + approval.ActionAllowedByPolicy + `', c.connector, c.name,
		` + conv + `, ` + turn + `, jsonb_build_object('agent_key', ` + keyName + `, 'call_id', ` + call + `, 'rule', c.mode,
		'policy_version', c.policy_version), ` + owner + `
	FROM c WHERE c.mode = '` + string(approval.ModeAllow) + `' AND (` + owner + ` <> '' OR ` + team + ` IS NOT NULL))`
}

// checkToolLineSQL is checkToolSQL that also writes the audit line of a
// call its policy allows (policyAllowLine); $9 is the key's name.
var checkToolLineSQL = `WITH c AS (` + checkToolSQL + `), ` + policyAllowLine("$3", "$9::text", "(SELECT k.team FROM api_keys k WHERE k.id = $3)", "$4", "$5", "$6", "$7") + `
	SELECT ` + toolColumns + ` FROM c`

// askingTools remembers the tools whose policy asked a person when a
// check last read them, so that the next check of one reads the turn's
// facts in its first statement (keyToolFactsGroupSQL) and a check of any other
// tool does not pay for them (keyToolGroupSQL). It only chooses the statement:
// a tool whose policy changed since is read right by either, and a check
// that needs the facts and did not read them reads them next
// (readTurnFacts). A tool not found is forgotten, and the whole set is
// dropped past maxAskingTools: runtimes can add tools, and a forgotten
// tool costs one more statement on its next check, nothing else.
type askingTools struct {
	m sync.Map     // toolName → struct{}
	n atomic.Int64 // about how many m holds
}

// maxAskingTools bounds askingTools.
const maxAskingTools = 10000

type toolName struct{ connector, tool string }

func (a *askingTools) asks(connector, tool string) bool {
	_, ok := a.m.Load(toolName{connector, tool})
	return ok
}

// note records what a check read of a tool (nil: not found), given
// whether the set held it when the check began (asks): the set is written
// only when that changes.
func (a *askingTools) note(connector, name string, held bool, tool *Tool) {
	k := toolName{connector, name}
	switch asks := tool != nil && tool.Mode == string(approval.ModeRequireApproval); {
	case held && !asks:
		if _, ok := a.m.LoadAndDelete(k); ok {
			a.n.Add(-1)
		}
	case !held && asks:
		if a.n.Load() >= maxAskingTools {
			a.m.Clear()
			a.n.Store(0)
		}
		if _, loaded := a.m.LoadOrStore(k, struct{}{}); !loaded {
			a.n.Add(1)
		}
	}
}

// keyAndTool reads the key and the tool of a check with the concurrent
// checks: a tool that asked a person when last read with the turn's facts
// (keyToolFactsGroupSQL, factReads), any other without them
// (keyToolGroupSQL, reads). An unknown or revoked key is refused
// (errUnauthorized); found is false when there is no tool to check, and
// facts is nil when they were not read.
func (d *DB) keyAndTool(ctx context.Context, hash []byte, req CheckRequest, args approval.Arguments) (key APIKey, tool Tool, found bool, facts *turnFacts, err error) {
	held := d.asking.asks(req.Connector, req.Tool)
	g := &d.reads
	if held {
		g = &d.factReads
	}
	r, live, err := d.readGrouped(ctx, g, hash, req, args)
	if err == nil && !live {
		err = errUnauthorized()
	}
	if err != nil {
		return APIKey{}, Tool{}, false, nil, err
	}
	tool, found, facts = r.result()
	if !found {
		d.asking.note(req.Connector, req.Tool, held, nil)
		return r.key, Tool{}, false, nil, nil
	}
	d.asking.note(req.Connector, req.Tool, held, &tool)
	return r.key, tool, true, facts, nil
}

// checkToolArgs are checkToolSQL's arguments, with key the key's id or
// hash.
func checkToolArgs(key any, req CheckRequest, args approval.Arguments) []any {
	return []any{req.Connector, req.Tool, key, req.User, req.ConversationID, req.TurnID, req.CallID, args.Digest}
}

// collectCheckTool reads checkToolSQL's answer: found is false for an
// unknown or retired tool and for a call already pending.
func collectCheckTool(rows pgx.Rows) (Tool, bool, error) {
	tool, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Tool])
	if errors.Is(err, pgx.ErrNoRows) {
		return Tool{}, false, nil
	}
	return tool, err == nil, err
}

// readCheckTool reads the tool of a check outside a playbook run.
func (d *DB) readCheckTool(ctx context.Context, key APIKey, req CheckRequest, args approval.Arguments) (Tool, bool, error) {
	if req.PlaybookRunID != "" {
		return Tool{}, false, nil
	}
	rows, err := d.Pool.Query(ctx, checkToolLineSQL, append(checkToolArgs(key.ID, req, args), key.Name)...)
	if err != nil {
		return Tool{}, false, err
	}
	return collectCheckTool(rows)
}

// readTurnFacts reads turnFactsSQL for tool as the check read it.
func readTurnFacts(ctx context.Context, q querier, key APIKey, req CheckRequest, tool Tool, digest string) (turnFacts, error) {
	rows, err := q.Query(ctx, turnFactsSQL, req.User, req.ConversationID, req.TurnID, digest, tool.ID, tool.PolicyVersion,
		tool.StandingApproval, key.ID, req.CallID, tool.Matchable)
	if err != nil {
		return turnFacts{}, err
	}
	return pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[turnFacts])
}

// findPendingCall finds the item of the same call still pending, or
// approved and not yet used, sent by the same API key to the same tool:
// identifiers that another key sends, or the same call id and arguments for
// another tool, never lead to this item. A runtime that sends its call
// again because the first answer was lost gets the item, not a second
// prompt — and, once approved, claims it and runs the call once.
func findPendingCall(ctx context.Context, tx pgx.Tx, key APIKey, req CheckRequest, toolID int64, digest string) (Approval, bool, error) {
	list, err := collectApprovals(tx.Query(ctx, approvalSelect+`
		WHERE a.api_key_id = $1 AND a.owner_subject = $2 AND a.conversation_id = $3 AND a.turn_id = $4 AND a.call_id = $5
		  AND a.tool_id = $6 AND a.arguments_digest = $7
		  AND ((a.status = 'pending' AND a.expires_at > now()) OR (a.status = 'approved' AND a.consumed_at IS NULL))
		ORDER BY a.created_at DESC LIMIT 1`,
		key.ID, req.User, req.ConversationID, req.TurnID, req.CallID, toolID, digest))
	if err != nil || len(list) == 0 {
		return Approval{}, false, err
	}
	return list[0], true, nil
}

// findEndedCall finds the newest item of the very call (same key, owner,
// conversation, turn, call id, tool and arguments) when it ended without
// running: rejected, expired or cancelled. An item used by its claim is not
// an answer to give again: the same call sent after it is a new question.
func findEndedCall(ctx context.Context, tx pgx.Tx, key APIKey, req CheckRequest, toolID int64, digest string) (Approval, bool, error) {
	list, err := collectApprovals(tx.Query(ctx, approvalSelect+`
		WHERE a.api_key_id = $1 AND a.owner_subject = $2 AND a.conversation_id = $3 AND a.turn_id = $4 AND a.call_id = $5
		  AND a.tool_id = $6 AND a.arguments_digest = $7 AND a.status <> 'pending'
		ORDER BY a.created_at DESC LIMIT 1`,
		key.ID, req.User, req.ConversationID, req.TurnID, req.CallID, toolID, digest))
	if err != nil || len(list) == 0 {
		return Approval{}, false, err
	}
	switch list[0].Status {
	case approval.StatusRejected, approval.StatusExpired, approval.StatusCancelled:
		return list[0], true, nil
	}
	return Approval{}, false, nil
}
