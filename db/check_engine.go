package db

// The check engine: how Countersign answers a runtime that asks, right
// before a tool runs, whether the call may run. Read this file top to
// bottom to know the order of a check; the statements it sends live in
// the storage files beside it (check_read.go reads, check_record.go and
// pending_write.go write, write_group.go and read_group.go share
// statements between concurrent checks, check_join.go and attach.go find
// the item a call joins). The decision itself is pure: approval.Evaluate.
//
// Every check takes these steps, in this order:
//
//  1. Authenticate the key. A missing, unknown or revoked key is refused
//     (unauthorized) and nothing of the check is used.
//  2. Load the tool and what the decision needs: the tool's policy (known,
//     not retired, its connector not deleted), and — only where the policy
//     asks a person — the turn's facts (rejections in this turn, the
//     owner's standing and scoped grants, this very call's earlier item).
//     On the fast path steps 1 and 2 are one statement, shared with the
//     checks that arrive with it (readGroups), and that statement also
//     writes the audit line of a call the tool's mode allows (step 4).
//  3. Decide in the pure domain: approval.Evaluate over the policy and the
//     facts (block, deny, repeated rejection, pre-approval, grants, ask),
//     then the passkey step-up, then "nobody could answer": a pending
//     outcome for a user who never signed in is refused (refuseUnknownUser).
//  4. Write the outcome: an audit line for every allow and refusal, the
//     grant's last use, or a pending item (row, full text, outbox event,
//     audit line) held to the policy read (hold_tool_policy). It commits,
//     durably, before the runtime hears the answer: a call that ran has its
//     line (invariant 19). Concurrent checks share one commit (writeGroups).
//  5. Notify: a pending item's NOTIFY and outbox event commit with its row
//     (queueEntries), so no screen, push or mail announces an item that
//     could still vanish.
//
// There are two ways through the same steps. The fast path (checkFast)
// sends no explicit transaction: most checks are answered by one shared
// read and, where they record something, one shared write. The
// transaction (checkTx) takes the steps one statement at a time, for what
// the fast path does not answer: a playbook run, an unknown or retired
// tool, the same call already pending or already answered, a call that
// may join another guard's or an earlier identical item, and a race lost
// to an identical call or to a policy change.

import (
	"context"
	"errors"
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

// CheckWithAPIKey is the check as the API runs it, for a runtime that sent
// rawKey: steps 1 and 2 are one statement (keyAndTool), so a call its
// policy allows costs one statement in all, shared with the checks that
// arrived with it (readGroups).
func (d *DB) CheckWithAPIKey(ctx context.Context, rawKey string, req CheckRequest, opt CheckOptions) (CheckResult, APIKey, error) {
	args := approval.ParseArguments(req.Arguments)
	if req.PlaybookRunID != "" {
		// 1. Authenticate; a run's check loads its tool inside its
		// transaction (checkTx).
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
	// 1 + 2. Authenticate the key and load the tool (and, for a tool known
	// to ask, the turn's facts) in one statement.
	key, tool, found, facts, err := d.keyAndTool(ctx, hashAPIKey(rawKey), req, args)
	if err == nil {
		err = d.noteAPIKeyUse(ctx, key)
	}
	if err != nil {
		return CheckResult{}, APIKey{}, translate("check", err)
	}
	// 3 – 5.
	res, err := d.check(ctx, key, req, args, opt, tool, found, facts, way)
	return res, key, err
}

// Check is the check for a key already authenticated (step 1 done): it
// loads the tool (step 2) and goes on as CheckWithAPIKey does.
func (d *DB) Check(ctx context.Context, key APIKey, req CheckRequest, opt CheckOptions) (CheckResult, error) {
	args := approval.ParseArguments(req.Arguments)
	tool, found, err := d.readCheckTool(ctx, key, req, args)
	if err != nil {
		return CheckResult{}, translate("check", err)
	}
	return d.check(ctx, key, req, args, opt, tool, found, nil, nil)
}

// check takes steps 3 to 5 for a call whose tool was loaded (found)
// without a transaction where it can (checkFast), and otherwise in one
// (checkTx), which takes steps 2 to 5 again.
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

// checkFast answers most checks without an explicit transaction, given the
// tool loaded by the check's first statement. The tool's row is read
// without a lock: a policy change that commits after this read is ordered
// after this check, as it would be had the check finished first — except
// for a pending item, which is held to the policy read and is not created
// under a changed one. decided is false, and the transaction answers, for
// a call that may join an earlier item, a call answered before, and a race
// lost to an identical call or to a policy change.
func (d *DB) checkFast(ctx context.Context, key APIKey, req CheckRequest, args approval.Arguments, opt CheckOptions, tool Tool,
	facts *turnFacts, way *onTheWay) (CheckResult, bool, error) {
	// 3. Decide on the policy alone. A call its policy allows is answered
	// from that alone, its audit line already written by the statement
	// that loaded the tool (policyAllowLine).
	in := approval.CheckInput{Policy: callPolicy(key, req, args, tool, opt), DeniedThreshold: opt.DeniedThreshold,
		Condition: evalCondition(tool.Condition, args, opt.Condition)}
	res := CheckResult{Outcome: approval.Evaluate(in), Tool: tool}
	var f turnFacts
	// Without the facts the decision order ends in "pending" only where it
	// would have looked at them: load them (step 2, unless the first
	// statement did) and decide again.
	if res.Outcome.Verdict == approval.Pending {
		if facts != nil {
			f = *facts
		} else {
			if way == nil {
				// Now likely to write, as a check of a tool known to ask.
				way = d.groups.onTheWay()
				defer way.leave()
			}
			d.factsApart.Add(1)
			var err error
			if f, err = readTurnFacts(ctx, d.Pool, key, req, tool, args.Digest); err != nil {
				return CheckResult{}, false, err
			}
		}
		res.Outcome = decideWithFacts(in, &f, args, tool, req)
	}
	// A call that may join an earlier item, or whose very call was answered
	// before (a retry whose first answer was lost), is answered in a
	// transaction: it gets that item, or its end, rather than a second prompt.
	if res.Outcome.Verdict == approval.Pending && (req.AttachToPending || f.SameCall) {
		return CheckResult{}, false, nil
	}
	if refused, err := d.refuseUnknownUser(ctx, d.Pool, key, req, &res); refused || err != nil {
		return res, err == nil, err
	}
	// 4 + 5. Write the outcome, and a pending item's notifications, with
	// what concurrent checks record (writeGroups); answered once committed.
	e, err := outcomeRecord(key, req, args, tool, f, res.Outcome, opt, true)
	if err == nil && e != nil {
		e.way = way
		if err = d.writeGrouped(ctx, e); err == nil {
			err = e.answer(&res)
		}
	}
	if isUniqueViolation(err) || errors.Is(err, errToolChanged) {
		return CheckResult{}, false, nil
	}
	return res, err == nil, err
}

// checkTx takes steps 2 to 5 inside one transaction, one statement at a
// time: for playbook runs, unknown or retired tools, a call already
// pending, a call that may join an earlier item, and a race checkFast
// lost.
func (d *DB) checkTx(ctx context.Context, key APIKey, req CheckRequest, args approval.Arguments, opt CheckOptions, out *CheckResult) error {
	return d.InTx(ctx, func(tx pgx.Tx) error {
		res := CheckResult{}
		defer func() { *out = res }()
		// 2. Load the tool.
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
		// 2. Load the facts: the run's, or the turn's.
		in := approval.CheckInput{Policy: callPolicy(key, req, args, tool, opt), DeniedThreshold: opt.DeniedThreshold,
			InPlaybookRun: req.PlaybookRunID != ""}
		in.Condition = evalCondition(tool.Condition, args, opt.Condition)
		var playbookID string
		var f turnFacts
		if req.PlaybookRunID != "" {
			if in.PreApproved, in.RunRefused, res.Playbook, playbookID, err = runFacts(ctx, tx, key, req.User, req.PlaybookRunID, tool.ID); err != nil {
				return err
			}
		} else if f, err = readTurnFacts(ctx, tx, key, req, tool, args.Digest); err != nil {
			return err
		}
		// 3. Decide.
		res.Outcome = decideWithFacts(in, &f, args, tool, req)
		// 4. A run's outcome is recorded on the run (it never waits).
		if req.PlaybookRunID != "" {
			return recordRunOutcome(ctx, tx, key, req, tool, playbookID, res.Outcome)
		}
		// 3. The same call sent again after its item ended without running
		// — a runtime whose first answer was lost — gets that end (the
		// reviewer's reason included), not a second prompt about a call
		// already answered.
		if res.Outcome.Verdict == approval.Pending {
			if a, ok, err := findEndedCall(ctx, tx, key, req, tool.ID, args.Digest); err != nil || ok {
				res.Outcome, res.Approval, res.Message = approval.Outcome{Verdict: approval.Deny, Code: a.Code()}, &a, a.Message()
				return err
			}
		}
		// 3 + 4. A call that would ask joins the item it belongs to instead.
		if res.Outcome.Verdict == approval.Pending && req.AttachToPending {
			if joined, err := joinOrAttach(ctx, tx, key, req, tool, args.Digest, opt, &res); joined || err != nil {
				return err
			}
		}
		// 3. Nobody could answer an item for a user who never signed in.
		if refused, err := d.refuseUnknownUser(ctx, tx, key, req, &res); refused || err != nil {
			return err
		}
		// 4 + 5. Write the outcome and a pending item's notifications.
		return applyOutcome(ctx, tx, key, req, args, tool, f, &res, opt)
	})
}

// decideWithFacts is step 3 with the facts loaded: the scoped grant that
// covers the call (a pure function of its scope and the arguments), the
// passkey step-up (issue 33), then the decision order.
func decideWithFacts(in approval.CheckInput, f *turnFacts, args approval.Arguments, tool Tool, req CheckRequest) approval.Outcome {
	in = f.match(in, args)
	in = in.RequiringProof(approval.Proof(tool.Proof).Stronger(req.Proof))
	return approval.Evaluate(in)
}

// joinOrAttach gives a call that would ask a person the item it belongs
// to, in the check's transaction, once the tool's policy is held: another
// guard's item for this very call (joinGuard: one call, one question,
// invariant 18), or an earlier identical call's item of the same guard
// (findAttachable). joined is false when there is none, and the check
// opens a new item.
func joinOrAttach(ctx context.Context, tx pgx.Tx, key APIKey, req CheckRequest, tool Tool, digest string, opt CheckOptions,
	res *CheckResult) (joined bool, err error) {
	if err := holdToolPolicy(ctx, tx, tool); err != nil {
		return false, err
	}
	if ok, err := joinGuard(ctx, tx, key, req, tool, digest, res); ok || err != nil {
		return true, err
	}
	a, ok, err := findAttachable(ctx, tx, key, req, tool, digest, opt.Timeout)
	if err != nil || !ok {
		return err != nil, err
	}
	res.Approval = &a
	return true, noteAttachedCall(ctx, tx, a, req.CallID) // the other guard asks with this call's id
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

// evalCondition evaluates a policy condition over the call's arguments:
// arguments that are not JSON, or no evaluator, fail closed ("ask").
func evalCondition(cond string, args approval.Arguments, f ConditionFunc) approval.ConditionResult {
	switch {
	case cond == "":
		return approval.NoCondition
	case !args.Parsed || f == nil:
		return approval.ConditionError
	}
	return f(cond, args)
}
