package db

import (
	"context"
	"fmt"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/passkey"
	"github.com/jackc/pgx/v5"
)

// Decide records a reviewer's decision: one conditional UPDATE, the grant
// it implies, its audit line and the notification, in one transaction. The
// reviewer comes from the session; only the owner may decide, anyone else
// gets not found. Of any number of concurrent decisions exactly one wins;
// each other one gets a conflict that says what became of the item, and the
// item as it is now (see lostDecision).
func (d *DB) Decide(ctx context.Context, id string, reviewer User, dec approval.Decision, reason string) (Approval, error) {
	return d.Answer(ctx, id, reviewer, Answer{Decision: dec, Reason: reason})
}

// Answer is what a reviewer posted: the decision, the text typed in the
// reason field, and for a standing decision how long it lasts (seconds as
// sent; "" for the longest the tool allows).
type Answer struct {
	Decision approval.Decision
	Reason   string
	Duration string
	// Scope is the person's choice within the proposed scope, for
	// "Always allow calls like this" (see approval.ChooseScope).
	Scope []string
	// BatchID names the batch the answer was given in (empty: alone); each
	// item of a batch is decided on its own, its audit line naming it.
	BatchID string
	// Passkey step-up (issue 33): the WebAuthn assertion sent with an
	// approval (the browser's PublicKeyCredential as JSON), and the relying
	// party that verifies it; see proveAnswer.
	Assertion []byte
	RP        *passkey.RP
}

// Answer records a reviewer's answer as Decide does. A reason typed with an
// approval is kept as the reviewer's note (never passed to the model); a
// standing grant ends after the duration asked for, which may not exceed
// the tool's cap.
func (d *DB) Answer(ctx context.Context, id string, reviewer User, ans Answer) (Approval, error) {
	dec := ans.Decision
	var out Approval
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		a, err := getApproval(ctx, tx, id, false)
		if err != nil {
			return err
		}
		p, err := planAnswer(ctx, tx, a, reviewer, ans)
		if err != nil {
			return err
		}
		// Passkey step-up (issue 33): verified and kept before the UPDATE.
		if p.receipt, err = proveAnswer(ctx, tx, a, reviewer, ans); err != nil {
			return err
		}
		if a.Rule().Needed() > 1 {
			out, err = castVote(ctx, tx, a, reviewer, ans, p)
			return err
		}
		decided, err := recordDecision(ctx, tx, id, reviewer, ans, p.standing)
		if err != nil {
			return err
		}
		if !decided {
			if err := notOfferedNow(ctx, tx, id, dec); err != nil {
				return err
			}
			out, err = lostDecision(ctx, tx, id, reviewer)
			return err
		}
		if p.standing {
			if err := insertGrant(ctx, tx, a, dec, p); err != nil {
				return err
			}
		}
		if out, err = getApproval(ctx, tx, id, false); err != nil {
			return err
		}
		if err := RecordAudit(ctx, tx, auditForApproval(out, reviewer.Actor(), decisionAction(dec), p.onBehalfOf.detail(answerDetail(out, ans, p)))); err != nil {
			return err
		}
		if err := linkReceipt(ctx, tx, p.receipt, id); err != nil { // passkey step-up (issue 33)
			return err
		}
		if err := outboxApproval(ctx, tx, EventApprovalDecided, out); err != nil {
			return err
		}
		return notify(ctx, tx, changeOf(a))
	})
	err = d.noteProofRefused(ctx, id, reviewer, ans, err) // passkey step-up (issue 33): audit a refusal
	return out, translate("decide approval", err)
}

// answerPlan is what an answer asks for beyond the item's status: whether
// it is standing, for how long, and the scope chosen for "Always allow
// calls like this".
type answerPlan struct {
	standing bool
	length   time.Duration
	sc       chosenScope
	receipt  *proofReceipt // passkey step-up (issue 33); nil: none needed
	// onBehalfOf is the person a delegate decides for ("": themselves).
	onBehalfOf delegator
}

// planAnswer checks that reviewer may decide item a (countersign_may_decide,
// and in whose place) and that the answer is offered, and reads the grant's
// length and scope the answer asks for.
func planAnswer(ctx context.Context, tx pgx.Tx, a Approval, reviewer User, ans Answer) (answerPlan, error) {
	dec := ans.Decision
	var p answerPlan
	var err error
	if p.onBehalfOf, err = decidingFor(ctx, tx, a.ID, reviewer.Subject); err != nil {
		return p, err
	}
	// Standing consent is the owner's alone: a delegate, a backup team's
	// member or anyone else a rule names decides this call only.
	if (p.onBehalfOf.Subject != "" || reviewer.Subject != a.OwnerSubject) && dec != approval.Approve && dec != approval.Reject {
		return p, errDelegateStanding
	}
	p.standing = dec == approval.ApproveConversation || dec == approval.AlwaysAllow || dec == approval.AlwaysMatching
	if !approval.Offered(dec, a.AvailableDecisions) {
		if p.standing {
			return p, errStandingNotOffered
		}
		return p, approval.Errorf(approval.KindUnprocessable, approval.CodeNotOffered, "That answer is not offered for this call.")
	}
	if p.standing {
		if err := holdStandingOffered(ctx, tx, a.ToolID, dec); err != nil {
			return p, err
		}
		if p.length, err = grantLength(ctx, tx, a.ToolID, ans.Duration); err != nil {
			return p, err
		}
	}
	if dec == approval.AlwaysMatching {
		// Chosen from what the server proposes for the call as stored,
		// read before the decision forgets its full text.
		if p.sc, err = chooseScope(ctx, tx, a, ans.Scope); err != nil {
			return p, err
		}
	}
	return p, nil
}

// recordDecision is the one conditional UPDATE: it decides item id only
// while it is pending, unexpired, offers the answer and (for a standing
// answer) its tool still offers standing approval. It reports whether it
// did.
func recordDecision(ctx context.Context, tx pgx.Tx, id string, reviewer User, ans Answer, standing bool) (bool, error) {
	dec, reason := ans.Decision, ans.Reason
	status, scope := approval.StatusApproved, string(dec.Scope())
	if dec == approval.Reject {
		status = approval.StatusRejected
	}
	var scopeArg *string
	if status == approval.StatusApproved {
		scopeArg = &scope
	}
	tag, err := tx.Exec(ctx, `
			UPDATE approvals SET status = $2, scope = $3, reviewer_id = $4, reject_reason = $5, reviewer_note = $6, decided_at = now()
			WHERE id = $1 AND status = 'pending' AND expires_at > now() AND $7::text = ANY(available_decisions)
			  AND (NOT $8 OR EXISTS (SELECT 1 FROM tools t WHERE t.id = approvals.tool_id
				AND (t.standing_approval OR ($7 = 'always_matching' AND t.matchable))))`,
		id, string(status), scopeArg, reviewer.ID, rejectReason(dec, reason), reviewerNote(dec, reason), string(dec), standing)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}

// insertGrant records the standing grant a standing answer dec on item a
// gives.
func insertGrant(ctx context.Context, tx pgx.Tx, a Approval, dec approval.Decision, p answerPlan) error {
	var conv *string
	if dec == approval.ApproveConversation {
		conv = &a.ConversationID
	}
	// The grant carries the policy version the person saw when asked.
	_, err := tx.Exec(ctx, `INSERT INTO standing_grants (user_subject, tool_id, conversation_id, policy_version, approval_id,
					expires_at, scope, scope_words)
				VALUES ($1, $2, $3, $4, $5, CASE WHEN $6::bigint > 0 THEN now() + make_interval(secs => $6::bigint) END, $7, $8)`,
		a.OwnerSubject, a.ToolID, conv, a.PolicyVersion, a.ID, int64(p.length/time.Second), p.sc.data, p.sc.words)
	return err
}

// answerDetail is the audit line's detail for answer ans on item out, as
// decided.
func answerDetail(out Approval, ans Answer, p answerPlan) map[string]any {
	detail := map[string]any{}
	if ans.Decision == approval.Reject {
		detail["reason_given"] = out.RejectReason != ""
	}
	if out.ReviewerNote != "" {
		detail["note_given"] = true
	}
	if p.standing {
		detail["duration"] = approval.DurationWords(p.length)
	}
	if p.sc.data != nil {
		detail["scope_kind"], detail["scope"] = p.sc.scope.Kind(), p.sc.scope.Fingerprint()
	}
	if ans.BatchID != "" {
		detail["batch_id"] = ans.BatchID
	}
	p.receipt.detail(detail) // passkey step-up (issue 33)
	return detail
}

// errStandingNotOffered refuses a standing answer for a tool that does not
// offer standing approval (now: an admin may have turned it off since the
// item was shown).
var errStandingNotOffered = approval.Errorf(approval.KindUnprocessable, approval.CodeNotOffered,
	"“Allow in this conversation” and “Always allow” are not offered for this tool: its policy does not allow standing approval. "+
		"Nothing was recorded; approve this call only, or reject it.")

// holdStandingOffered reads, as committed now, whether the tool offers
// standing approval, and holds its row (shared) until the decision
// commits: a policy change either committed first and is seen here, or
// waits for this decision. The tool is locked before the item, in the
// order UpdatePolicy and the check take them, so that none deadlocks.
func holdStandingOffered(ctx context.Context, tx pgx.Tx, toolID int64, dec approval.Decision) error {
	var offered bool
	err := tx.QueryRow(ctx, `SELECT standing_approval OR ($2 AND matchable) FROM tools WHERE id = $1 FOR SHARE`,
		toolID, dec == approval.AlwaysMatching).Scan(&offered)
	if err == nil && !offered {
		return errStandingNotOffered
	}
	return err
}

// notOfferedNow explains a decision whose UPDATE matched nothing because
// the answer is no longer offered (the item's buttons or the tool's policy
// changed since it was read), rather than because someone else decided.
func notOfferedNow(ctx context.Context, tx pgx.Tx, id string, dec approval.Decision) error {
	var offered, pending bool
	err := tx.QueryRow(ctx, `SELECT a.status = 'pending' AND a.expires_at > now(),
		$2::text = ANY(a.available_decisions) AND ($2::text NOT IN ('approve_conversation', 'always', 'always_matching')
			OR t.standing_approval OR ($2::text = 'always_matching' AND t.matchable))
		FROM approvals a JOIN tools t ON t.id = a.tool_id WHERE a.id = $1`, id, string(dec)).Scan(&pending, &offered)
	if err != nil {
		return err
	}
	if pending && !offered && (dec == approval.ApproveConversation || dec == approval.AlwaysAllow || dec == approval.AlwaysMatching) {
		return errStandingNotOffered
	}
	return nil
}

// lostDecision explains a decision whose conditional UPDATE matched
// nothing: it returns the item as it is now and the conflict naming what
// became of it. Why a second read: the read before the UPDATE may predate a
// concurrent winner (the UPDATE then waited for the winner's row lock and
// found the row no longer pending). Under READ COMMITTED this new statement
// sees every commit the UPDATE saw, and its now() is the UPDATE's, so
// "expired" is said only when the database's clock says so.
func lostDecision(ctx context.Context, tx pgx.Tx, id string, reviewer User) (Approval, error) {
	a, err := getApproval(ctx, tx, id, false)
	if err != nil {
		return Approval{}, err
	}
	status := a.Status
	if status == approval.StatusPending {
		if a.ExpiresIn > 0 {
			// Not decided, not due, yet the UPDATE matched nothing: say
			// nothing rather than guess; the call does not run either way.
			return Approval{}, fmt.Errorf("decision matched nothing on pending item %s", id)
		}
		status = approval.StatusExpired
	}
	by := ""
	if a.ReviewerID != nil {
		if *a.ReviewerID == reviewer.ID {
			by = "you"
		} else {
			rows, err := tx.Query(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, *a.ReviewerID)
			if err != nil {
				return Approval{}, err
			}
			u, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[User])
			if err != nil {
				return Approval{}, err
			}
			by = u.DisplayName()
		}
	}
	scope := approval.ScopeOnce
	if a.Scope != nil {
		scope = approval.Scope(*a.Scope)
	}
	return a, approval.LateDecision(status, scope, by)
}

// MaxRejectReason is the longest reason kept, in characters.
const MaxRejectReason = 500

func rejectReason(dec approval.Decision, reason string) string {
	if dec != approval.Reject {
		return ""
	}
	r := []rune(reason)
	if len(r) > MaxRejectReason {
		r = r[:MaxRejectReason]
	}
	return string(r)
}

// reviewerNote keeps what was typed in the reason field with an approval,
// as the reviewer's own note: a reason is never silently dropped.
func reviewerNote(dec approval.Decision, reason string) string {
	if dec == approval.Reject {
		return ""
	}
	return rejectReason(approval.Reject, reason)
}

func decisionAction(d approval.Decision) string {
	switch d {
	case approval.ApproveConversation:
		return approval.ActionApprovedConversation
	case approval.AlwaysAllow:
		return approval.ActionAlwaysAllowed
	case approval.AlwaysMatching:
		return approval.ActionAlwaysMatching
	case approval.Reject:
		return approval.ActionRejected
	}
	return approval.ActionApproved
}
