package db

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// Vote is one person's answer to an item that needs more than one
// approval (a quorum).
type Vote struct {
	ApprovalID string `db:"approval"`
	Subject    string `db:"subject"`
	Name       string `db:"name"`
	Decision   string `db:"decision"`
	// Counts: the vote counts toward its item's quorum, by the one rule
	// that counts approvals (countersign_vote_counts, or the count kept
	// when the quorum was met), so a card names exactly whom it counts.
	Counts bool `db:"counts"`
}

// errAlreadyVoted refuses a second answer of one person to one item: a
// quorum is N distinct people, and nobody counts twice.
var errAlreadyVoted = approval.Errorf(approval.KindConflict, approval.CodeAlreadyDecided,
	"You already answered this request. It needs other people's approvals now; your answer counts once.")

// errPairedVote refuses an approval of a person whose delegate (or whose
// delegator) already approved: the two are one vote (invariant 15).
var errPairedVote = approval.Errorf(approval.KindConflict, approval.CodeAlreadyDecided,
	"Someone you stand in for, or who stands in for you, already approved this request. Together you count once; it needs another person's approval.")

// castVote records reviewer's answer to item a, whose rule needs more than
// one approval, in the caller's transaction: the item's row is locked
// first, so that concurrent votes count one after another; the vote is a
// row of its own (one per person: a repeat is refused) with its own audit
// line. The first rejection ends the item. An approval turns it approved
// when the approvals of people who may decide it (the one rule, so never
// its owner's) reach the quorum — through the same conditional UPDATE as
// every decision. A delegate's vote is recorded under the person they
// decide for (p.onBehalfOf), so that the two are one vote; a vote for an
// item that needs a passkey carries its own receipt (p.receipt).
func castVote(ctx context.Context, tx pgx.Tx, a Approval, reviewer User, ans Answer, p answerPlan) (Approval, error) {
	var live bool
	if err := tx.QueryRow(ctx, `SELECT status = 'pending' AND expires_at > now() FROM approvals WHERE id = $1 FOR UPDATE`,
		a.ID).Scan(&live); err != nil {
		return Approval{}, err
	}
	if !live {
		return lostDecision(ctx, tx, a.ID, reviewer)
	}
	dec := ans.Decision
	voter := reviewer.Subject
	if p.onBehalfOf.Subject != "" {
		voter = p.onBehalfOf.Subject
	}
	vote := "approve"
	if dec == approval.Reject {
		vote = "reject"
	} else if dec != approval.Approve {
		return Approval{}, approval.Errorf(approval.KindUnprocessable, approval.CodeNotOffered, "That answer is not offered for this call.")
	}
	// One vote per person and item: under their own name or, as a
	// delegate, under the person's — never both (approval_votes' two
	// unique keys).
	tag, err := tx.Exec(ctx, `INSERT INTO approval_votes (approval, subject, reviewer_id, decision, with_proof)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, a.ID, voter, reviewer.ID, vote, p.receipt != nil)
	if err != nil {
		return Approval{}, err
	}
	if tag.RowsAffected() == 0 {
		return Approval{}, errAlreadyVoted
	}
	// A delegate never counts beside the person they stand in for
	// (invariant 15): an approval paired with theirs is refused, not kept
	// as a vote that does not count.
	var paired bool
	if err := tx.QueryRow(ctx, `SELECT countersign_vote_paired(a, v) FROM approval_votes v JOIN approvals a ON a.id = v.approval
		WHERE v.approval = $1 AND v.subject = $2`,
		a.ID, voter).Scan(&paired); err != nil {
		return Approval{}, err
	}
	if paired && vote == "approve" {
		return Approval{}, errPairedVote
	}
	var in int
	// A vote counts by the one rule (countersign_vote_counts): its subject
	// may still decide the item in their own right (a delegate's vote is
	// under the person's subject), it carries a passkey once the item needs
	// one, and no delegate counts beside their person.
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM approval_votes v JOIN approvals a ON a.id = v.approval
		WHERE v.approval = $1 AND countersign_vote_counts(a, v)`, a.ID).Scan(&in); err != nil {
		return Approval{}, err
	}
	detail := map[string]any{"quorum": a.Quorum, "approvals": in, "team": a.DeciderTeam}
	if dec == approval.Approve && in >= a.Quorum {
		// The votes that met the quorum, as they counted now: decided_by
		// and the request page name exactly these.
		if _, err := tx.Exec(ctx, `UPDATE approval_votes v SET counted = countersign_vote_counts(a, v)
			FROM approvals a WHERE a.id = v.approval AND v.approval = $1`, a.ID); err != nil {
			return Approval{}, err
		}
	}
	if dec == approval.Reject || in >= a.Quorum {
		decided, err := recordDecision(ctx, tx, a.ID, reviewer, ans, false)
		if err != nil {
			return Approval{}, err
		}
		if !decided {
			return Approval{}, fmt.Errorf("db: quorum decision matched nothing on locked pending item %s", a.ID)
		}
		if dec == approval.Approve {
			detail["quorum_met"] = true
		}
	}
	out, err := getApproval(ctx, tx, a.ID, false)
	if err != nil {
		return Approval{}, err
	}
	if err := RecordAudit(ctx, tx, auditForApproval(out, reviewer.Actor(), decisionAction(dec),
		p.onBehalfOf.detail(mergeDetail(answerDetail(out, ans, p), detail)))); err != nil {
		return Approval{}, err
	}
	if err := linkReceipt(ctx, tx, p.receipt, a.ID); err != nil { // passkey step-up (issue 33)
		return Approval{}, err
	}
	if out.Status != approval.StatusPending {
		if err := outboxApproval(ctx, tx, EventApprovalDecided, out); err != nil {
			return Approval{}, err
		}
	}
	return out, notify(ctx, tx, changeOf(out))
}

func mergeDetail(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// VotesOn returns the votes cast on items ids, with each voter's display
// name, in the order they were cast.
func (d *DB) VotesOn(ctx context.Context, ids []string) (map[string][]Vote, error) {
	out := map[string][]Vote{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := d.Pool.Query(ctx, `SELECT v.approval::text AS approval, v.subject,
		COALESCE((SELECT COALESCE(NULLIF(u.name, ''), NULLIF(u.email, ''), u.subject) FROM users u WHERE u.subject = v.subject
			ORDER BY u.id LIMIT 1), v.subject) AS name, v.decision,
		v.decision = 'approve' AND COALESCE(v.counted, countersign_vote_counts(a, v)) AS counts
		FROM approval_votes v JOIN approvals a ON a.id = v.approval
		WHERE v.approval = ANY($1::uuid[]) ORDER BY v.at, v.subject`, ids)
	if err != nil {
		return nil, translate("votes", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Vote])
	if err != nil {
		return nil, translate("votes", err)
	}
	for _, v := range list {
		out[v.ApprovalID] = append(out[v.ApprovalID], v)
	}
	return out, nil
}

// countedApprovalSQL holds for vote v of item a when it is an approval
// that counted: as recorded when the quorum was met, else by the one rule
// as it reads now. decided_by, the request page and Activity name these.
const countedApprovalSQL = `v.decision = 'approve' AND COALESCE(v.counted, countersign_vote_counts(a, v))`

// DecidedBy names the people whose approval approved item a, in the order
// they gave it (decidedBy).
func (d *DB) DecidedBy(ctx context.Context, a Approval) ([]string, error) {
	names, err := decidedBy(ctx, d.Pool, a)
	return names, translate("decided by", err)
}

// decidedBy names the people whose approval item a carries, in the order
// they gave it: each approver of a quorum whose vote counted when the
// quorum was met (approval_votes.counted; for an item decided before that
// was recorded, the one rule as it reads now), or the one reviewer.
func decidedBy(ctx context.Context, q querier, a Approval) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT COALESCE(NULLIF(u.name, ''), NULLIF(u.email, ''), u.subject)
		FROM (SELECT v.reviewer_id AS id, v.at FROM approval_votes v JOIN approvals a ON a.id = v.approval
				WHERE v.approval = $1 AND $2 AND `+countedApprovalSQL+`
			UNION ALL SELECT a.reviewer_id, a.decided_at FROM approvals a WHERE a.id = $1 AND NOT $2) d
		JOIN users u ON u.id = d.id ORDER BY d.at`, a.ID, a.Rule().Needed() > 1)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if names == nil {
		names = []string{}
	}
	return names, err
}

// PendingOverviewLimit is the most items the admins' overview lists.
const PendingOverviewLimit = 500

// PendingOverview lists every pending item, the longest waiting first, for
// the admins' read-only overview (who asked, who may decide, how long it
// waits). It shows items to admins who may not decide them: it draws no
// buttons, and the request page still follows the one rule.
func (d *DB) PendingOverview(ctx context.Context) ([]Approval, error) {
	list, err := collectApprovals(d.Pool.Query(ctx, approvalSelect+`
		WHERE a.status = 'pending' AND a.expires_at > now() ORDER BY a.created_at, a.id LIMIT $1`, PendingOverviewLimit))
	return list, translate("pending overview", err)
}

// DeciderNamesOf names the people who may decide item id, by the one rule.
func (d *DB) DeciderNamesOf(ctx context.Context, id string) ([]string, error) {
	rows, err := d.Pool.Query(ctx, `SELECT min(COALESCE(NULLIF(u.name, ''), NULLIF(u.email, ''), u.subject)) AS n
		FROM approvals a JOIN users u ON `+mayDecideSQL("u.subject")+` WHERE a.id = $1 GROUP BY u.subject ORDER BY n`, id)
	if err != nil {
		return nil, translate("decider names", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return list, translate("decider names", err)
}

// PersonName is the display name of the person with subject.
func (d *DB) PersonName(ctx context.Context, subject string) (string, error) {
	var n string
	err := d.Pool.QueryRow(ctx, `SELECT COALESCE(NULLIF(name, ''), NULLIF(email, ''), subject) FROM users WHERE subject = $1
		ORDER BY id LIMIT 1`, subject).Scan(&n)
	return n, translate("person name", err)
}
