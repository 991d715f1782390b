package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

// SoakReport is what the soak saw; OK says whether every target was met.
type SoakReport struct {
	Duration          time.Duration
	Instances         int
	Runtimes          int
	Calls             int
	Allowed           int
	Refused           int
	Unanswered        int // calls never answered
	Decisions         int // decisions made
	DecisionsReached  int // decisions whose waiter got the matching answer
	DoubleClaims      int
	RanWithoutClaim   int
	StuckPending      int // pending past their cap + 5 s at the end
	LateWaiters       int // answered later than cap + 5 s (outages excluded)
	AuditMismatches   []string
	LostDecisions     []string // what became of each decision that did not reach its waiter
	ClaimAnswersLost  int      // approvals claimed whose claim's answer a fault cut off: the call did not run
	Verify            db.ChainReport
	Faults            []string
	SlowestPastOutage time.Duration
}

// OK reports whether every target was met.
func (r SoakReport) OK() bool {
	return r.Unanswered == 0 && r.Decisions == r.DecisionsReached && r.DoubleClaims == 0 && r.RanWithoutClaim == 0 &&
		r.StuckPending == 0 && r.LateWaiters == 0 && len(r.AuditMismatches) == 0 && r.Verify.Intact && r.Verify.Checkpoints > 0 &&
		r.Decisions > 0
}

func (r SoakReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Soak: %s, %d instances on one Postgres, %d runtimes\n", r.Duration, r.Instances, r.Runtimes)
	for _, f := range r.Faults {
		fmt.Fprintf(&b, "  fault %s\n", f)
	}
	fmt.Fprintf(&b, "  calls %d: allowed %d, refused %d, never answered %d\n", r.Calls, r.Allowed, r.Refused, r.Unanswered)
	fmt.Fprintf(&b, "  decisions made %d, reached their waiter %d (lost %d)\n", r.Decisions, r.DecisionsReached, r.Decisions-r.DecisionsReached)
	if r.ClaimAnswersLost > 0 {
		fmt.Fprintf(&b, "  approvals claimed whose answer a fault cut off %d: those calls did not run (at most once; the runtime fails closed)\n", r.ClaimAnswersLost)
	}
	for _, l := range r.LostDecisions {
		fmt.Fprintf(&b, "    lost: %s\n", l)
	}
	fmt.Fprintf(&b, "  double claims %d, runtimes that ran without a claim %d\n", r.DoubleClaims, r.RanWithoutClaim)
	fmt.Fprintf(&b, "  items stuck pending past their cap %d\n", r.StuckPending)
	fmt.Fprintf(&b, "  waiters answered later than cap + 5 s (outage excluded) %d; slowest past its cap %s\n", r.LateWaiters, r.SlowestPastOutage.Round(time.Millisecond))
	if len(r.AuditMismatches) == 0 {
		fmt.Fprintf(&b, "  audit events match the state changes\n")
	}
	for _, m := range r.AuditMismatches {
		fmt.Fprintf(&b, "  audit mismatch: %s\n", m)
	}
	fmt.Fprintf(&b, "  audit verify: %s\n", r.Verify)
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "  %s (targets: 0 lost, 0 doubled, 0 stuck, every waiter answered within cap + 5 s after Postgres is back, chain intact and signed checkpoints agree)\n", verdict)
	return b.String()
}

// report compares what the runtimes saw with what the database holds.
func (s *soak) report(ctx context.Context, d time.Duration, runtimes int) (SoakReport, error) {
	r := SoakReport{Duration: d, Instances: len(s.inst), Runtimes: runtimes, Faults: s.faults}
	status, err := s.itemStatuses(ctx)
	if err != nil {
		return r, err
	}
	byItem := s.countCalls(&r, status)
	s.countDecisions(ctx, &r, status, byItem)
	if err := s.store.Pool.QueryRow(ctx, `SELECT count(*) FROM approvals WHERE status = 'pending' AND expires_at < now() - interval '5 seconds'`).Scan(&r.StuckPending); err != nil {
		return r, err
	}
	if err := s.auditMatches(ctx, &r); err != nil {
		return r, err
	}
	if err := s.store.SealAll(ctx); err != nil {
		return r, err
	}
	r.Verify, err = s.store.VerifyAuditSigned(ctx, s.pub)
	return r, err
}

// itemStatuses is every item's status, by id.
func (s *soak) itemStatuses(ctx context.Context) (map[string]string, error) {
	status := map[string]string{}
	rows, err := s.store.Pool.Query(ctx, `SELECT id::text, status FROM approvals`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			rows.Close()
			return nil, err
		}
		status[id] = st
	}
	rows.Close()
	return status, nil
}

// countCalls counts what the runtimes' calls saw: answered, allowed (and
// whether their item was claimed, once), refused, late. It returns each
// item's call.
func (s *soak) countCalls(r *SoakReport, status map[string]string) map[string]*soakCall {
	byItem := map[string]*soakCall{}
	allowedPerItem := map[string]int{}
	for _, c := range s.calls {
		r.Calls++
		switch {
		case !c.answered:
			r.Unanswered++
		case c.allowed:
			r.Allowed++
			allowedPerItem[c.approvalID]++
			if status[c.approvalID] != string(approval.StatusConsumed) {
				r.RanWithoutClaim++
			}
		default:
			r.Refused++
		}
		if c.approvalID != "" {
			byItem[c.approvalID] = c
		}
		late := c.end.Sub(c.start) - s.cap - s.outageWithin(c.start, c.end)
		r.SlowestPastOutage = max(r.SlowestPastOutage, late)
		if c.answered && late > 5*time.Second {
			r.LateWaiters++
		}
	}
	for _, n := range allowedPerItem {
		if n > 1 {
			r.DoubleClaims++
		}
	}
	return byItem
}

// countDecisions counts the decisions made and those that reached their
// call's runtime; each one that did not is described in LostDecisions.
func (s *soak) countDecisions(ctx context.Context, r *SoakReport, status map[string]string, byItem map[string]*soakCall) {
	for id, dec := range s.decided {
		r.Decisions++
		c := byItem[id]
		if c != nil && c.answered && c.allowed == (dec == approval.Approve) {
			r.DecisionsReached++
			continue
		}
		// Only the call's own runtime claims in the soak: an approved item
		// consumed while its call was refused was claimed by that call, and
		// the claim's answer was lost. The decision reached the runtime; an
		// approval runs a call at most once, so the call does not run.
		if c != nil && c.answered && !c.allowed && dec == approval.Approve && status[id] == string(approval.StatusConsumed) {
			r.DecisionsReached++
			r.ClaimAnswersLost++
			continue
		}
		r.LostDecisions = append(r.LostDecisions, s.lostDecision(ctx, id, dec, status[id], c))
	}
}

// lostDecision describes a decision that did not reach its call: the
// item's times and what its call (if any) saw.
func (s *soak) lostDecision(ctx context.Context, id string, dec approval.Decision, status string, c *soakCall) string {
	l := fmt.Sprintf("item %s decided %s, now %s", id, dec, status)
	var times string
	if err := s.store.Pool.QueryRow(ctx, `SELECT format('created %s, decided %s, expires %s, consumed %s',
			to_char(created_at, 'HH24:MI:SS.MS'), coalesce(to_char(decided_at, 'HH24:MI:SS.MS'), '-'),
			to_char(expires_at, 'HH24:MI:SS.MS'), coalesce(to_char(consumed_at, 'HH24:MI:SS.MS'), '-'))
		FROM approvals WHERE id = $1`, id).Scan(&times); err == nil {
		l += " (" + times + ")"
	}
	l += "; "
	if c == nil {
		l += "no call waited on it"
	} else {
		l += fmt.Sprintf("call %s answered %t allowed %t code %q, %s–%s", c.callID, c.answered, c.allowed, c.code,
			c.start.Format("15:04:05.000"), c.end.Format("15:04:05.000"))
	}
	return l
}

// auditMatches compares, per kind, the audit lines with the items' states.
func (s *soak) auditMatches(ctx context.Context, r *SoakReport) error {
	checks := []struct{ name, events, items string }{
		{"requested", `action = 'approval requested'`, `true`},
		{"claimed", `action = 'claimed' AND detail->>'second_guard' IS NULL`, `status = 'consumed'`}, // a second guard's claim of a joined item is its own line
		{"rejected", `action = 'rejected'`, `status = 'rejected'`},
		{"approved", `action = 'approved'`, `status IN ('approved', 'consumed') OR (status IN ('cancelled', 'expired') AND scope IS NOT NULL)`},
		{"expired", `action = 'expired'`, `status = 'expired'`},
	}
	for _, c := range checks {
		var events, items int
		if err := s.store.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM audit_events WHERE `+c.events+`),
			(SELECT count(*) FROM approvals WHERE `+c.items+`)`).Scan(&events, &items); err != nil {
			return err
		}
		if events != items {
			r.AuditMismatches = append(r.AuditMismatches, fmt.Sprintf("%s: %d events, %d items", c.name, events, items))
		}
	}
	return nil
}

// outageWithin is how long Postgres was down within [from, to].
func (s *soak) outageWithin(from, to time.Time) time.Duration {
	var d time.Duration
	for _, o := range s.outages {
		a, b := max(o[0].UnixNano(), from.UnixNano()), min(o[1].UnixNano(), to.UnixNano())
		if b > a {
			d += time.Duration(b - a)
		}
	}
	return d
}
