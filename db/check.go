package db

import (
	"context"
	"errors"
	"fmt"
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
	// Runtime is what the runtime says about itself; Diff the unified diff
	// it computed for an edit. Both are shown to the reviewer as untrusted
	// text and are never part of the digest.
	Runtime approval.Runtime
	Diff    string
	// Proof is what the runtime asks an approval of this call to carry
	// (passkey step-up, issue 33): stronger than the tool's, never weaker.
	Proof approval.Proof
	// OfferedDecisions, when not nil, are the decisions the runtime can
	// carry out: the item offers no other standing decision.
	OfferedDecisions []string
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

// Check runs the decision order for one call: it reads the tool's policy,
// and where the policy asks a person the turn's rejections and the owner's
// grants, evaluates, and records what follows — nothing for an allow by
// policy, an audited auto-approval, an audited refusal, or a pending item
// (see checkFast for the round trips, checkTx for the cases that need a
// transaction). A pending item is committed before the caller is answered
// and before the notification is delivered (Postgres sends NOTIFY at
// commit), so nothing announces an item that could still vanish.
func (d *DB) Check(ctx context.Context, key APIKey, req CheckRequest, opt CheckOptions) (CheckResult, error) {
	args := approval.ParseArguments(req.Arguments)
	tool, found, err := d.readCheckTool(ctx, key, req, args)
	if err != nil {
		return CheckResult{}, translate("check", err)
	}
	return d.check(ctx, key, req, args, opt, tool, found, nil, nil)
}

// CheckWithAPIKey is Check for a runtime that sent key: the key is
// authenticated by the statement that reads the tool (keyAndTool), so a
// call its policy allows costs one statement in all, shared with the
// checks that arrived with it (readGroups). A missing, unknown or revoked
// key is refused, and nothing of the check is used.
func (d *DB) CheckWithAPIKey(ctx context.Context, rawKey string, req CheckRequest, opt CheckOptions) (CheckResult, APIKey, error) {
	args := approval.ParseArguments(req.Arguments)
	if req.PlaybookRunID != "" {
		// A run's check reads its tool inside its transaction (checkTx).
		key, err := d.AuthenticateAPIKey(ctx, rawKey)
		if err != nil {
			return CheckResult{}, APIKey{}, err
		}
		res, err := d.check(ctx, key, req, args, opt, Tool{}, false, nil, nil)
		return res, key, err
	}
	if !apiKeyShaped(rawKey) {
		return CheckResult{}, APIKey{}, errUnauthorized()
	}
	// A check of a tool that asked a person when last read will likely
	// write: the group writer waits a moment for it (awaitComing). It is
	// counted before its key is known good: a request with a wrong key
	// counts for one round trip, and a writer waits groupLinger at most.
	var way *onTheWay
	if d.asking.asks(req.Connector, req.Tool) {
		way = d.groups.onTheWay()
		defer way.leave()
	}
	key, tool, found, facts, err := d.keyAndTool(ctx, hashAPIKey(rawKey), req, args)
	if err == nil {
		err = d.noteAPIKeyUse(ctx, key)
	}
	if err != nil {
		return CheckResult{}, APIKey{}, translate("check", err)
	}
	res, err := d.check(ctx, key, req, args, opt, tool, found, facts, way)
	return res, key, err
}

// check decides a call whose tool was read (found) without a transaction
// where it can (checkFast), and otherwise in one.
func (d *DB) check(ctx context.Context, key APIKey, req CheckRequest, args approval.Arguments, opt CheckOptions, tool Tool, found bool,
	facts *turnFacts, way *onTheWay) (CheckResult, error) {
	if req.User == "" && key.Team == nil {
		way.leave()
		return CheckResult{}, errUserRequired
	}
	var res CheckResult
	var decided bool
	var err error
	if found {
		if res, decided, err = d.checkFast(ctx, key, req, args, opt, tool, facts, way); err != nil {
			return CheckResult{}, translate("check", err)
		}
	}
	// A check answered in a transaction does not go through the writer.
	way.leave()
	for attempt := 0; !decided && attempt < 3; attempt++ {
		err = d.checkTx(ctx, key, req, args, opt, &res)
		// Two identical calls racing both insert; the loser retries and
		// finds the winner's item. A policy changed between the read and
		// the pending item's insert is read again.
		decided = !isUniqueViolation(err) && !errors.Is(err, errToolChanged)
	}
	if err != nil {
		return CheckResult{}, translate("check", err)
	}
	if res.Outcome.Verdict == approval.Deny && res.Message == "" {
		res.Message = approval.Message(res.Outcome.Code, approval.MessageInput{Tool: res.Tool.DisplayName, Playbook: res.Playbook})
	}
	return res, nil
}

// checkTx runs the whole check inside one transaction: for playbook runs,
// unknown or retired tools, a call already pending, a call that may join an
// earlier item, and a race checkFast lost.
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
		in := approval.CheckInput{Policy: callPolicy(key, req, args, tool, opt), DeniedThreshold: opt.DeniedThreshold,
			InPlaybookRun: req.PlaybookRunID != ""}
		in.Condition = evalCondition(tool.Condition, args, opt.Condition)
		var playbookID string
		if req.PlaybookRunID != "" {
			if in.PreApproved, in.RunRefused, res.Playbook, playbookID, err = runFacts(ctx, tx, key, req.User, req.PlaybookRunID, tool.ID); err != nil {
				return err
			}
		}
		var f turnFacts
		if req.PlaybookRunID == "" {
			if f, err = readTurnFacts(ctx, tx, key, req, tool, args.Digest); err != nil {
				return err
			}
		}
		in = f.match(in, args)
		in = in.RequiringProof(approval.Proof(tool.Proof).Stronger(req.Proof)) // passkey step-up (issue 33)
		res.Outcome = approval.Evaluate(in)
		if req.PlaybookRunID != "" {
			return recordRunOutcome(ctx, tx, key, req, tool, playbookID, res.Outcome)
		}
		// The same call sent again after its item ended without running — a
		// runtime whose first answer was lost — gets that end (the
		// reviewer's reason included), not a second prompt about a call
		// already answered.
		if res.Outcome.Verdict == approval.Pending {
			if a, ok, err := findEndedCall(ctx, tx, key, req, tool.ID, args.Digest); err != nil || ok {
				res.Outcome, res.Approval, res.Message = approval.Outcome{Verdict: approval.Deny, Code: a.Code()}, &a, a.Message()
				return err
			}
		}
		if res.Outcome.Verdict == approval.Pending && req.AttachToPending {
			if err := holdToolPolicy(ctx, tx, tool); err != nil {
				return err
			}
			// One call, one question (invariant 18): another guard's item
			// for this very call (see joinGuard).
			if ok, err := joinGuard(ctx, tx, key, req, tool, args.Digest, &res); ok || err != nil {
				return err
			}
			if a, ok, err := findAttachable(ctx, tx, key, req, tool, args.Digest, opt.Timeout); err != nil || ok {
				res.Approval = &a
				if err == nil {
					err = noteAttachedCall(ctx, tx, a, req.CallID) // the other guard asks with this call's id
				}
				return err
			}
		}
		if refused, err := d.refuseUnknownUser(ctx, tx, key, req, &res); refused || err != nil {
			return err
		}
		return applyOutcome(ctx, tx, key, req, args, tool, f, &res, opt)
	})
}

// callPolicy is the tool's policy as it applies to this call: where its
// approver rule names anyone but the owner alone, or the item would belong
// to a team's key, standing grants are neither offered nor honoured.
func callPolicy(key APIKey, req CheckRequest, args approval.Arguments, tool Tool, opt CheckOptions) approval.Policy {
	return tool.Policy().ForRule(tool.RuleFor(args, opt.Condition), key.TeamItem(req.User))
}

// errUserRequired refuses a check without user from a person's key: only
// a team's key (a service agent) may omit it, its items going to the team.
var errUserRequired = approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest,
	"user is required: the OIDC subject of the person whose agent asks (only a team's key may omit it).")

func evalCondition(cond string, args approval.Arguments, f ConditionFunc) approval.ConditionResult {
	switch {
	case cond == "":
		return approval.NoCondition
	case !args.Parsed || f == nil:
		return approval.ConditionError
	}
	return f(cond, args)
}

// applyOutcome records what the outcome means (outcomeRecord) in one
// round trip: one batch, sent through s — an open transaction, or the pool
// for an implicit one — queued as the group writer queues a group of one. A
// pending item is held to the tool's policy as read (hold_tool_policy): a
// policy changed since fails the whole batch with errToolChanged, and
// nothing of it is kept.
func applyOutcome(ctx context.Context, s batchSender, key APIKey, req CheckRequest, args approval.Arguments,
	tool Tool, f turnFacts, res *CheckResult, opt CheckOptions) error {
	e, err := outcomeRecord(key, req, args, tool, f, res.Outcome, opt, false)
	if err != nil || e == nil {
		return err
	}
	b := &pgx.Batch{}
	created, err := queueEntries(ctx, b, []*groupEntry{e})
	if err != nil {
		return err // a statement that could not be queued sends nothing
	}
	if err := s.SendBatch(ctx, b).Close(); err != nil {
		return toolChanged(err)
	}
	created()
	return e.answer(res)
}

// outcomeRecord is what outcome o records, as an entry of the group
// writer: the audit line of an allow by a standing grant (and the grant's
// use), of an allow by policy or of a refusal, or a pending item with its
// audit line. The line of a call whose tool's mode is allow is written by
// the statement that read the tool when read says so (policyAllowLine),
// and then nothing more is recorded (nil).
func outcomeRecord(key APIKey, req CheckRequest, args approval.Arguments, tool Tool, f turnFacts, o approval.Outcome,
	opt CheckOptions, read bool) (*groupEntry, error) {
	ev := approval.AuditEvent{Actor: key.Actor(), Connector: tool.Connector, Tool: tool.Name,
		ConversationID: req.ConversationID, TurnID: req.TurnID, RunID: req.PlaybookRunID, OwnerSubject: req.User}
	switch {
	case o.Verdict == approval.Allow && o.Via == approval.ViaConversationGrant && f.ConversationGrant != nil:
		ev.Action, ev.Detail = approval.ActionAutoApprovedConv, map[string]any{"grant_id": *f.ConversationGrant}
		return &groupEntry{ev: ev, grant: *f.ConversationGrant}, nil
	case o.Verdict == approval.Allow && o.Scoped && f.ScopedMatch != nil:
		ev.Action, ev.Detail = approval.ActionAutoApprovedScoped, scopedDetail(*f.ScopedMatch)
		return &groupEntry{ev: ev, grant: f.ScopedMatch.ID}, nil
	case o.Verdict == approval.Allow && o.Via == approval.ViaAlwaysAllow && !o.Scoped && f.AlwaysGrant != nil:
		ev.Action, ev.Detail = approval.ActionAutoApprovedAlways, map[string]any{"grant_id": *f.AlwaysGrant}
		return &groupEntry{ev: ev, grant: *f.AlwaysGrant}, nil
	case o.Verdict == approval.Deny && o.Code == approval.CodeDeniedRepeated:
		ev.Action = approval.ActionBlockedRepeated
		return &groupEntry{ev: ev}, nil
	case o.Verdict == approval.Deny && o.Code == approval.CodeBlockedByPolicy:
		ev.Action = approval.ActionBlockedByPolicy
		return &groupEntry{ev: ev}, nil
	case o.Verdict == approval.Pending:
		p := newPendingWrite(key, req, args, tool, opt)
		ev.Action, ev.ApprovalID, ev.Detail = approval.ActionRequested, p.a.ID, withPreImages(runtimeDetail(req.Runtime), p.a.Diff)
		return &groupEntry{ev: ev, pending: p}, nil
	case o.Verdict == approval.Allow && o.Via == approval.ViaPolicy && read && tool.Mode == string(approval.ModeAllow):
		return nil, nil
	case o.Verdict == approval.Allow && o.Via == approval.ViaPolicy:
		ev.Action, ev.Detail = approval.ActionAllowedByPolicy, policyAllowDetail(key, req, tool)
		return &groupEntry{ev: ev}, nil
	}
	return nil, fmt.Errorf("db: check: no record for outcome %+v", o)
}

// noteGrantUseSQL notes the use of the grants $1, at most once a minute
// each: every call under one grant would otherwise queue on the grant's row
// lock until the previous one commits.
const noteGrantUseSQL = `UPDATE standing_grants SET last_used_at = now()
	WHERE id = ANY($1) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`

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

// recordRunOutcome audits what an unattended run was allowed, through its
// pre-approvals or by policy, and what it was refused, and records every
// call on the run (allowed or refused), so that the playbook page shows
// what a run did and a schedule never fails silently.
func recordRunOutcome(ctx context.Context, tx pgx.Tx, key APIKey, req CheckRequest, tool Tool, playbookID string, o approval.Outcome) error {
	ev := approval.AuditEvent{Actor: key.Actor(), Connector: tool.Connector, Tool: tool.Name, ConversationID: req.ConversationID,
		TurnID: req.TurnID, PlaybookID: playbookID, RunID: req.PlaybookRunID, OwnerSubject: req.User}
	if err := recordRunCall(ctx, tx, req, tool, playbookID, o); err != nil {
		return err
	}
	switch {
	case o.Verdict == approval.Allow && o.Via == approval.ViaPreapproval:
		ev.Action = approval.ActionAllowedByPreapproval
	case o.Verdict == approval.Allow && o.Via == approval.ViaPolicy:
		ev.Action, ev.Detail = approval.ActionAllowedByPolicy, policyAllowDetail(key, req, tool)
	case o.Verdict == approval.Deny:
		ev.Action, ev.Detail = approval.ActionRefusedInRun, map[string]any{"code": string(o.Code)}
	default:
		return nil
	}
	return RecordAudit(ctx, tx, ev)
}

// runtimeDetail is the audit detail of a requested item: what the runtime
// said about itself, when it said anything (its words, bounded by
// approval.CheckRuntime; never argument contents).
func runtimeDetail(r approval.Runtime) map[string]any {
	if r.Empty() {
		return nil
	}
	d := map[string]any{}
	for k, v := range map[string]string{"runtime_client": r.Client, "runtime_host": r.Host, "runtime_working_directory": r.WorkingDirectory} {
		if v != "" {
			d[k] = v
		}
	}
	return d
}

// withPreImages adds to an audit detail the SHA-256 of each file whose diff
// the item shows as the runtime read it (hashes only: never a path or
// contents), so that an item asked again after a file changed shows the
// drift beside the first one. d unchanged when there are none.
func withPreImages(d map[string]any, diff *approval.DiffPreview) map[string]any {
	h := diff.PreImageHashes()
	if len(h) == 0 {
		return d
	}
	if d == nil {
		d = map[string]any{}
	}
	d["pre_images"] = h
	return d
}

// policyAllowDetail is the audit detail of a call its policy allowed: which key
// asked, the call's id, and the rule that allowed it — the mode, or the
// condition that was false for the call (the admin's words, never the
// call's arguments). policyAllowLine writes the same keys.
func policyAllowDetail(key APIKey, req CheckRequest, tool Tool) map[string]any {
	d := map[string]any{"agent_key": key.Name, "call_id": req.CallID, "rule": tool.Mode, "policy_version": tool.PolicyVersion}
	if tool.Mode == string(approval.ModeRequireApproval) {
		d["rule"], d["condition"] = "condition", tool.Condition
	}
	return d
}
