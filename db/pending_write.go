package db

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// pendingWrite is a pending item to create: what the check read and
// decided, and, once written, the times the database gave it.
type pendingWrite struct {
	a       Approval // as every reader will see it, but its times
	preview []byte   // a.Preview as stored
	diff    *string  // a.Diff as stored; nil: none
	raw     string   // the full argument text
	timeout time.Duration
	written bool // the times are the database's: the item committed
}

// newPendingWrite is the pending item of a check whose outcome asks a
// person. What the reviewer is shown about the tool is kept with the item,
// so that a later catalog sync cannot relabel a call already waiting.
func newPendingWrite(key APIKey, req CheckRequest, args approval.Arguments, tool Tool, opt CheckOptions) *pendingWrite {
	rule := tool.RuleFor(args, opt.Condition)
	policy := tool.Policy().ForRule(rule, key.TeamItem(req.User))
	decisions := approval.AvailableDecisions(policy.StandingApproval, policy.Matchable)
	// Passkey step-up (issue 33): the proof approving needs; such an item
	// offers no standing approval.
	proof := approval.RequiredProof(approval.Proof(tool.Proof), evalCondition(tool.ProofCondition, args, opt.Condition), req.Proof)
	if proof == approval.ProofPasskey {
		decisions = approval.WithoutStanding(decisions)
	}
	decisions = approval.NarrowOffered(decisions, req.OfferedDecisions)
	avail := make([]string, len(decisions))
	for i, d := range decisions {
		avail[i] = string(d)
	}
	p := &pendingWrite{raw: args.Raw, timeout: opt.Timeout, a: Approval{ID: newApprovalID(), OwnerSubject: req.User,
		APIKeyID: key.ID, ConversationID: req.ConversationID, ConversationTitle: req.ConversationTitle, TurnID: req.TurnID,
		CallID: req.CallID, ToolID: tool.ID, Connector: tool.Connector, Tool: tool.Name, ArgumentsDigest: args.Digest,
		ArgumentsSize: args.Size, Preview: approval.Preview(args), AgentReason: req.Reason, AvailableDecisions: avail,
		PolicyVersion: tool.PolicyVersion, Status: approval.StatusPending, ToolDisplay: tool.DisplayName,
		ConnectorDisplay: tool.ConnectorDisplay, ConnectorKind: tool.ConnectorKind, ReadOnlyHint: tool.ReadOnlyHint,
		DestructiveHint: tool.DestructiveHint, OpenWorldHint: tool.OpenWorldHint, ToolMaxGrant: tool.MaxGrantSeconds,
		APIKeyName: key.Name, RuntimeClient: req.Runtime.Client, RuntimeHost: req.Runtime.Host,
		RuntimeDirectory: req.Runtime.WorkingDirectory, ProofRequired: proof}}
	// A shell command is parsed whole here, before the preview shortens it.
	p.a.Preview.Shell = approval.ShellPreview(args, tool.ShellArgument, req.Runtime.WorkingDirectory)
	p.a.Deciders, p.a.DeciderTeam, p.a.Quorum = string(rule.Deciders), rule.Team, rule.Quorum
	if key.TeamItem(req.User) {
		p.a.OwnerTeam = *key.Team
	}
	if policy.ScopedOffered() {
		if s := approval.ProposeScope(args, tool.ShellArgument); !s.Empty() {
			p.a.Preview.Scope = &s
		}
	}
	// The preview as readers will read it back: a JSON round trip, which
	// for one drops empty lists.
	if b, err := json.Marshal(p.a.Preview); err == nil {
		p.preview, p.a.Preview = b, approval.ArgumentPreview{}
		if err := json.Unmarshal(b, &p.a.Preview); err != nil {
			p.preview = nil
		}
	}
	// The diff's preview likewise; a diff that cannot be stored is not
	// shown (the arguments are, and they are what the approval binds).
	if d := approval.PreviewDiff(req.Diff); d != nil {
		if b, err := json.Marshal(d); err == nil {
			var back approval.DiffPreview
			if json.Unmarshal(b, &back) == nil {
				s := string(b)
				p.diff, p.a.Diff = &s, &back
			}
		}
	}
	return p
}

// heldPolicy is a tool's policy version that pending items are created
// under.
type heldPolicy struct {
	tool    int64
	version int
}

func (p *pendingWrite) held() heldPolicy { return heldPolicy{p.a.ToolID, p.a.PolicyVersion} }

// change is the notification that wakes the item's owner's screens.
func (p *pendingWrite) change() Change { return changeOf(p.a) }

// approval is the item as created.
func (p *pendingWrite) approval() (Approval, error) {
	if !p.written {
		return Approval{}, fmt.Errorf("db: create pending %s: not written", p.a.ID)
	}
	return p.a, nil
}

// pendingInsertSQL inserts items from arrays, one element per item, and
// returns each one's times by the database's clock.
const pendingInsertSQL = `
	INSERT INTO approvals (id, owner_subject, api_key_id, conversation_id, turn_id, call_id, tool_id, connector, tool,
		arguments_digest, arguments_size, preview, agent_reason, available_decisions, policy_version, expires_at,
		conversation_title, shown_tool_display, shown_connector_display, shown_connector_kind, shown_hints_taken,
		shown_read_only_hint, shown_destructive_hint, shown_open_world_hint, runtime_client, runtime_host,
		runtime_working_directory, context_diff, deciders, decider_team, quorum, owner_team)
	SELECT id::uuid, owner, key, conv, turn, call, tool_id, connector, tool, digest, size, preview::jsonb, reason,
		string_to_array(avail, ' '), version, now() + timeout_us * interval '1 microsecond', title, tool_display,
		connector_display, connector_kind, true, read_only, destructive, open_world, rt_client, rt_host, rt_dir,
		diff::jsonb, deciders, NULLIF(decider_team, ''), quorum, NULLIF(owner_team, '')
	FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[],
		$9::text[], $10::text[], $11::int[], $12::text[], $13::text[], $14::text[], $15::int[], $16::bigint[],
		$17::text[], $18::text[], $19::text[], $20::text[], $21::bool[], $22::bool[], $23::bool[], $24::text[],
		$25::text[], $26::text[], $27::text[], $28::text[], $29::text[], $30::int[], $31::text[])
		AS u(id, owner, key, conv, turn, call, tool_id, connector, tool, digest, size, preview, reason, avail, version,
			timeout_us, title, tool_display, connector_display, connector_kind, read_only, destructive, open_world,
			rt_client, rt_host, rt_dir, diff, deciders, decider_team, quorum, owner_team)
	RETURNING id::text, created_at, expires_at, GREATEST(expires_at - now(), interval '0')`

// queuePending queues the writes of items ps but their audit lines and
// notifications: the rows, one statement for all, the full texts and the
// outbox events. The rows are queued in the order of their unique key, so
// that two instances writing the same calls wait on each other in one
// order, never in a cycle. Once the batch has committed, created gives
// each item the times the database gave it (inside a transaction: once
// the batch succeeded, to be kept only if the transaction commits); until
// then ps are unchanged.
func queuePending(ctx context.Context, b *pgx.Batch, ps []*pendingWrite) (created func(), err error) {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(x, y *pendingWrite) int {
		a, b := x.a, y.a
		return cmp.Or(cmp.Compare(a.APIKeyID, b.APIKeyID), cmp.Compare(a.OwnerSubject, b.OwnerSubject),
			cmp.Compare(a.ConversationID, b.ConversationID), cmp.Compare(a.TurnID, b.TurnID), cmp.Compare(a.CallID, b.CallID),
			cmp.Compare(a.ToolID, b.ToolID), cmp.Compare(a.ArgumentsDigest, b.ArgumentsDigest), cmp.Compare(a.ID, b.ID))
	})
	cols := make([][]any, 31)
	events := make([]NotificationEvent, len(ps))
	texts := make([][]byte, len(ps))
	ids := make([]string, len(ps))
	type times struct {
		created, expires time.Time
		in               time.Duration
	}
	got := make(map[string]*times, len(ps))
	for i, p := range ps {
		a := p.a
		if p.preview == nil {
			return nil, fmt.Errorf("db: create pending %s: no preview", a.ID)
		}
		for c, v := range []any{a.ID, a.OwnerSubject, a.APIKeyID, a.ConversationID, a.TurnID, a.CallID, a.ToolID,
			a.Connector, a.Tool, a.ArgumentsDigest, a.ArgumentsSize, string(p.preview), a.AgentReason,
			strings.Join(a.AvailableDecisions, " "), a.PolicyVersion, p.timeout.Microseconds(), a.ConversationTitle,
			a.ToolDisplay, a.ConnectorDisplay, a.ConnectorKind, a.ReadOnlyHint, a.DestructiveHint, a.OpenWorldHint,
			a.RuntimeClient, a.RuntimeHost, a.RuntimeDirectory, p.diff, a.Deciders, a.DeciderTeam, a.Quorum, a.OwnerTeam} {
			cols[c] = append(cols[c], v)
		}
		ids[i], texts[i], got[a.ID] = a.ID, []byte(p.raw), nil
		events[i] = approvalEvent(EventApprovalRequested, a)
	}
	args := make([]any, len(cols))
	for c := range cols {
		args[c] = cols[c]
	}
	b.Queue(pendingInsertSQL, args...).Query(func(rows pgx.Rows) error {
		n := 0
		for rows.Next() {
			var id string
			var t times
			if err := rows.Scan(&id, &t.created, &t.expires, &t.in); err != nil {
				return err
			}
			if prev, ok := got[id]; !ok || prev != nil {
				return fmt.Errorf("db: create pending: unexpected row %s", id)
			}
			got[id] = &t
			n++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if n != len(ps) {
			return fmt.Errorf("db: create pending: %d rows for %d items", n, len(ps))
		}
		return nil
	})
	// The full text lives only while the item waits: a trigger deletes it
	// as the item leaves pending, on every path (decision, expiry,
	// cancellation, an admin's block). Its owner may expand a shortened
	// value with it before deciding.
	queueProofRequired(b, ps) // passkey step-up (issue 33)
	b.Queue(`INSERT INTO approval_arguments (approval_id, arguments) SELECT i::uuid, t FROM unnest($1::text[], $2::bytea[]) AS u(i, t)`,
		ids, texts)
	if err := recordEvents(ctx, batchExec{b}, events); err != nil {
		return nil, err
	}
	return func() {
		for _, p := range ps {
			if t := got[p.a.ID]; t != nil {
				p.a.CreatedAt, p.a.ExpiresAt, p.a.ExpiresIn, p.written = t.created, t.expires, t.in, true
			}
		}
	}, nil
}
