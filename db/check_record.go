package db

// What the check writes (steps 4 and 5 of check_engine.go): the record of
// each outcome, queued as one batch, and the hold on the tool's policy that
// a pending item is created under.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

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

// errToolChanged says the tool's policy changed between the check's read
// and its pending item's insert; the check starts again.
var errToolChanged = errors.New("db: the tool's policy changed during the check")

// holdToolPolicy locks the tool's row (shared), so that a policy change or
// retirement either commits first and is seen here, or waits for this
// transaction; it fails with errToolChanged when the policy read earlier is
// no longer current (see hold_tool_policy in the migrations).
func holdToolPolicy(ctx context.Context, tx pgx.Tx, tool Tool) error {
	_, err := tx.Exec(ctx, `SELECT hold_tool_policy($1, $2)`, tool.ID, tool.PolicyVersion)
	return toolChanged(err)
}

// toolChanged turns hold_tool_policy's refusal into errToolChanged.
func toolChanged(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "CS001" {
		return errToolChanged
	}
	return err
}

// newApprovalID is a random (version 4) UUID: an item's id is chosen before
// its insert, so that every write about it goes in the same batch.
func newApprovalID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// scopedDetail is the audit detail of a call a scoped grant allowed: the
// grant and the scope it matched, named by its fingerprint — never the
// words or values it holds.
func scopedDetail(g scopedGrant) map[string]any {
	return map[string]any{"grant_id": g.ID, "kind": "scoped", "scope_kind": g.Scope.Kind(), "scope": g.Scope.Fingerprint()}
}
