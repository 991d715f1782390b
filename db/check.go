package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// CheckRequest is a runtime's question: may this call run?
type CheckRequest struct {
	CallID         string
	User           string // OIDC subject of the conversation's owner
	ConversationID string
	// ConversationTitle is the runtime's label for the conversation, if it
	// sends one; shown to the reviewer in place of the id.
	ConversationTitle string
	TurnID            string
	Connector         string
	Tool              string
	Arguments         string
	Reason            string
	PlaybookRunID     string
	// AttachToPending lets a call that would ask a person join the item an
	// earlier identical call opened (see findAttachable).
	AttachToPending bool
}

// CheckResult is the check's answer.
type CheckResult struct {
	Outcome  approval.Outcome
	Playbook string // the run's playbook, in a run
	Tool     Tool
	Approval *Approval // on pending
	Message  string    // model-facing, on deny
}

// ConditionFunc evaluates a policy condition over parsed arguments.
type ConditionFunc func(condition string, args approval.Arguments) approval.ConditionResult

// CheckOptions are the check's settings.
type CheckOptions struct {
	Timeout         time.Duration
	DeniedThreshold int
	Condition       ConditionFunc // nil: any condition fails closed to "ask"
}

// Check runs the decision order for one call. A call the tool's policy
// alone allows is answered by one statement, with no transaction (see
// checkByPolicy); any other runs inside one transaction: it
// reads the tool's policy, the turn's rejections and the owner's grants,
// evaluates, and records what follows — an audited auto-approval, an
// audited refusal, or a pending item. A pending item is committed before the
// caller answers and before the notification is delivered (Postgres sends
// NOTIFY at commit), so nothing announces an item that could still vanish.
func (d *DB) Check(ctx context.Context, key APIKey, req CheckRequest, opt CheckOptions) (CheckResult, error) {
	args := approval.ParseArguments(req.Arguments)
	res, decided, err := d.checkByPolicy(ctx, key, req, args, opt)
	if err != nil {
		return CheckResult{}, translate("check", err)
	}
	if decided {
		return res, nil
	}
	for attempt := 0; attempt < 3; attempt++ {
		err = d.checkTx(ctx, key, req, args, opt, &res)
		// Two identical calls racing both insert; the loser retries and
		// finds the winner's item. A policy changed between the read and
		// the pending item's insert is read again.
		if !isUniqueViolation(err) && !errors.Is(err, errToolChanged) {
			break
		}
	}
	if err != nil {
		return CheckResult{}, translate("check", err)
	}
	if res.Outcome.Verdict == approval.Deny {
		res.Message = approval.Message(res.Outcome.Code, approval.MessageInput{Tool: res.Tool.DisplayName, Playbook: res.Playbook})
	}
	return res, nil
}

func (d *DB) checkTx(ctx context.Context, key APIKey, req CheckRequest, args approval.Arguments, opt CheckOptions, out *CheckResult) error {
	return d.InTx(ctx, func(tx pgx.Tx) error {
		res := CheckResult{}
		defer func() { *out = res }()
		res = CheckResult{}
		tool, err := activeTool(ctx, tx, req.Connector, req.Tool, false)
		if err != nil {
			return err
		}
		res.Tool = tool
		// The same call sent again while pending gets the same item — unless
		// the tool is blocked now: an admin's block wins over whatever was
		// pending, so the decision order below denies it.
		if !tool.Policy().Blocks() {
			if a, ok, err := findPendingCall(ctx, tx, key, req, tool.ID, args.Digest); err != nil || ok {
				res.Outcome, res.Approval = approval.Outcome{Verdict: approval.Pending}, &a
				return err
			}
		}
		in := approval.CheckInput{Policy: tool.Policy(), DeniedThreshold: opt.DeniedThreshold,
			InPlaybookRun: req.PlaybookRunID != ""}
		in.Condition = evalCondition(tool.Condition, args, opt.Condition)
		var playbookID string
		if req.PlaybookRunID != "" {
			if in.PreApproved, in.RunRefused, res.Playbook, playbookID, err = runFacts(ctx, tx, key, req.User, req.PlaybookRunID, tool.ID); err != nil {
				return err
			}
		}
		if in.RejectionsThisTurn, err = rejectionsThisTurn(ctx, tx, req, tool.ID, args.Digest); err != nil {
			return err
		}
		grants, err := validGrants(ctx, tx, req, tool)
		if err != nil {
			return err
		}
		in.ConversationGrant, in.AlwaysGrant = grants.conversation != 0, grants.always != 0
		res.Outcome = approval.Evaluate(in)
		if req.PlaybookRunID != "" {
			return recordRunOutcome(ctx, tx, key, req, tool, playbookID, res.Outcome)
		}
		return d.applyOutcome(ctx, tx, key, req, args, tool, grants, &res, opt)
	})
}

func evalCondition(cond string, args approval.Arguments, f ConditionFunc) approval.ConditionResult {
	switch {
	case cond == "":
		return approval.NoCondition
	case !args.Parsed || f == nil:
		return approval.ConditionError
	}
	return f(cond, args)
}

func (d *DB) applyOutcome(ctx context.Context, tx pgx.Tx, key APIKey, req CheckRequest, args approval.Arguments,
	tool Tool, grants grantIDs, res *CheckResult, opt CheckOptions) error {
	ev := approval.AuditEvent{Actor: key.Actor(), Connector: tool.Connector, Tool: tool.Name,
		ConversationID: req.ConversationID, TurnID: req.TurnID, RunID: req.PlaybookRunID}
	o := res.Outcome
	switch {
	case o.Verdict == approval.Allow && o.Via == approval.ViaConversationGrant:
		ev.Action, ev.Detail = approval.ActionAutoApprovedConv, map[string]any{"grant_id": grants.conversation}
		return useGrant(ctx, tx, grants.conversation, ev)
	case o.Verdict == approval.Allow && o.Via == approval.ViaAlwaysAllow:
		ev.Action, ev.Detail = approval.ActionAutoApprovedAlways, map[string]any{"grant_id": grants.always}
		return useGrant(ctx, tx, grants.always, ev)
	case o.Verdict == approval.Deny && o.Code == approval.CodeDeniedRepeated:
		ev.Action = approval.ActionBlockedRepeated
		return RecordAudit(ctx, tx, ev)
	case o.Verdict == approval.Deny && o.Code == approval.CodeBlockedByPolicy:
		ev.Action = approval.ActionBlockedByPolicy
		return RecordAudit(ctx, tx, ev)
	case o.Verdict == approval.Pending:
		if err := holdToolPolicy(ctx, tx, tool); err != nil {
			return err
		}
		if req.AttachToPending {
			if a, ok, err := findAttachable(ctx, tx, key, req, tool, args.Digest, opt.Timeout); err != nil || ok {
				res.Approval = &a
				return err
			}
		}
		a, err := createPending(ctx, tx, key, req, args, tool, opt.Timeout)
		if err != nil {
			return err
		}
		res.Approval = &a
		if err := outboxApproval(ctx, tx, EventApprovalRequested, a); err != nil {
			return err
		}
		ev.Action, ev.ApprovalID = approval.ActionRequested, a.ID
		if err := RecordAudit(ctx, tx, ev); err != nil {
			return err
		}
		return notify(ctx, tx, Change{ApprovalID: a.ID, Owner: a.OwnerSubject})
	}
	return nil
}

func useGrant(ctx context.Context, tx pgx.Tx, id int64, ev approval.AuditEvent) error {
	// At most once a minute: every call under one grant would otherwise
	// queue on the grant's row lock until the previous one commits.
	if _, err := tx.Exec(ctx, `UPDATE standing_grants SET last_used_at = now()
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, id); err != nil {
		return err
	}
	return RecordAudit(ctx, tx, ev)
}

// findPendingCall finds the item of the same call still pending, sent by
// the same API key to the same tool: identifiers that another key sends, or
// the same call id and arguments for another tool, never lead to this item.
func findPendingCall(ctx context.Context, tx pgx.Tx, key APIKey, req CheckRequest, toolID int64, digest string) (Approval, bool, error) {
	list, err := collectApprovals(tx.Query(ctx, approvalSelect+`
		WHERE a.api_key_id = $1 AND a.owner_subject = $2 AND a.conversation_id = $3 AND a.turn_id = $4 AND a.call_id = $5
		  AND a.tool_id = $6 AND a.arguments_digest = $7 AND a.status = 'pending' AND a.expires_at > now()`,
		key.ID, req.User, req.ConversationID, req.TurnID, req.CallID, toolID, digest))
	if err != nil || len(list) == 0 {
		return Approval{}, false, err
	}
	return list[0], true, nil
}

// rejectionsThisTurn counts explicit rejections of this tool with these
// arguments in this turn since the last approval of the same combination;
// expiries do not count.
func rejectionsThisTurn(ctx context.Context, tx pgx.Tx, req CheckRequest, toolID int64, digest string) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `
		SELECT count(*) FROM approvals r
		WHERE r.owner_subject = $1 AND r.conversation_id = $2 AND r.turn_id = $3 AND r.tool_id = $4
		  AND r.arguments_digest = $5 AND r.status = 'rejected'
		  AND r.decided_at > COALESCE((SELECT max(p.decided_at) FROM approvals p
			WHERE p.owner_subject = $1 AND p.conversation_id = $2 AND p.turn_id = $3 AND p.tool_id = $4
			  AND p.arguments_digest = $5 AND p.status IN ('approved', 'consumed')), '-infinity')`,
		req.User, req.ConversationID, req.TurnID, toolID, digest).Scan(&n)
	return n, err
}

type grantIDs struct{ conversation, always int64 }

// validGrants finds standing grants that are valid now: not revoked, given
// under the tool's current policy version, while the tool offers standing
// approval. Grants are never consulted in playbook runs.
func validGrants(ctx context.Context, tx pgx.Tx, req CheckRequest, tool Tool) (grantIDs, error) {
	var g grantIDs
	if !tool.StandingApproval || req.PlaybookRunID != "" {
		return g, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT id, conversation_id IS NOT NULL FROM standing_grants
		WHERE user_subject = $1 AND tool_id = $2 AND revoked_at IS NULL AND policy_version = $3
		  AND (conversation_id IS NULL OR conversation_id = $4) AND (expires_at IS NULL OR expires_at > now())
		ORDER BY id DESC`, req.User, tool.ID, tool.PolicyVersion, req.ConversationID)
	if err != nil {
		return g, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var conv bool
		if err := rows.Scan(&id, &conv); err != nil {
			return g, err
		}
		if conv && g.conversation == 0 {
			g.conversation = id
		} else if !conv && g.always == 0 {
			g.always = id
		}
	}
	return g, rows.Err()
}

func createPending(ctx context.Context, tx pgx.Tx, key APIKey, req CheckRequest, args approval.Arguments, tool Tool, timeout time.Duration) (Approval, error) {
	decisions := approval.AvailableDecisions(tool.StandingApproval)
	avail := make([]string, len(decisions))
	for i, d := range decisions {
		avail[i] = string(d)
	}
	// One round trip for the insert and the item read back as every reader
	// sees it; the full text, kept only while the item waits, is another.
	// What the reviewer is shown about the tool is kept with the item, so a
	// later catalog sync cannot relabel a call already waiting.
	list, err := collectApprovals(tx.Query(ctx, `
		WITH ins AS (
			INSERT INTO approvals (owner_subject, api_key_id, conversation_id, turn_id, call_id, tool_id, connector, tool,
				arguments_digest, arguments_size, preview, agent_reason, available_decisions, policy_version, expires_at,
				conversation_title, shown_tool_display, shown_connector_display, shown_connector_kind, shown_hints_taken,
				shown_read_only_hint, shown_destructive_hint, shown_open_world_hint)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, now() + $15::interval, $16,
				$17, $18, $19, true, $20, $21, $22)
			RETURNING *)
		`+strings.Replace(approvalSelect, "FROM approvals a", "FROM ins a", 1),
		req.User, key.ID, req.ConversationID, req.TurnID, req.CallID, tool.ID, tool.Connector, tool.Name,
		args.Digest, args.Size, approval.Preview(args), req.Reason, avail, tool.PolicyVersion, timeout,
		req.ConversationTitle, tool.DisplayName, tool.ConnectorDisplay, tool.ConnectorKind,
		tool.ReadOnlyHint, tool.DestructiveHint, tool.OpenWorldHint))
	if err != nil {
		return Approval{}, err
	}
	if len(list) != 1 {
		return Approval{}, fmt.Errorf("db: create pending: %d rows", len(list))
	}
	if err := keepArguments(ctx, tx, list[0].ID, args.Raw); err != nil {
		return Approval{}, err
	}
	return list[0], nil
}

// recordRunOutcome audits what an unattended run was allowed through its
// pre-approvals and what it was refused, and records every call on the run
// (allowed or refused), so that the playbook page shows what a run did and a
// schedule never fails silently. A call the policy allows is recorded on the
// run only: it is not an audit event anywhere else either.
func recordRunOutcome(ctx context.Context, tx pgx.Tx, key APIKey, req CheckRequest, tool Tool, playbookID string, o approval.Outcome) error {
	ev := approval.AuditEvent{Actor: key.Actor(), Connector: tool.Connector, Tool: tool.Name, ConversationID: req.ConversationID,
		TurnID: req.TurnID, PlaybookID: playbookID, RunID: req.PlaybookRunID}
	if err := recordRunCall(ctx, tx, req, tool, playbookID, o); err != nil {
		return err
	}
	switch {
	case o.Verdict == approval.Allow && o.Via == approval.ViaPreapproval:
		ev.Action = approval.ActionAllowedByPreapproval
	case o.Verdict == approval.Deny:
		ev.Action, ev.Detail = approval.ActionRefusedInRun, map[string]any{"code": string(o.Code)}
	default:
		return nil
	}
	return RecordAudit(ctx, tx, ev)
}
