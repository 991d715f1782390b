package db_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

// TestMayDecideAway walks escalation and delegation through the one
// predicate (countersign_may_decide) and countersign_deciding_for, whose
// subject a vote is recorded under: the backup team decides only once the
// item escalated; a delegate decides only while the delegation holds, in
// the person's place (one vote for the pair), never in a chain, never for a
// quorum rule that already counts them, and never for their own agent's
// quorum.
func TestMayDecideAway(t *testing.T) {
	ctx := context.Background()
	store, _ := testenv.OpenDB(t)
	setup := []string{
		`INSERT INTO teams (name, source) VALUES ('finance', 'admin'), ('oncall', 'admin')`,
		`INSERT INTO team_members (team, subject, source) VALUES
			('finance', 'maya', 'oidc'), ('finance', 'finn', 'admin'), ('finance', 'fiona', 'oidc'),
			('oncall', 'otto', 'admin'), ('oncall', 'maya', 'admin')`,
		`INSERT INTO users (issuer, subject, name) VALUES ('i', 'maya', 'Maya'), ('i', 'sam', 'Sam'), ('i', 'finn', 'Finn'),
			('i', 'tess', 'Tess'), ('i', 'otto', 'Otto'), ('i', 'una', 'Una')`,
		// Maya → Sam, holding now; Sam → Tess (a chain Tess must not inherit);
		// Una → Finn, ended early; Otto → Una, ran out.
		`INSERT INTO delegations (person_id, delegate_id, person_subject, delegate_subject, ends_at)
			SELECT p.id, g.id, p.subject, g.subject, now() + interval '1 hour' FROM users p, users g WHERE p.subject = 'maya' AND g.subject = 'sam'`,
		`INSERT INTO delegations (person_id, delegate_id, person_subject, delegate_subject, ends_at)
			SELECT p.id, g.id, p.subject, g.subject, now() + interval '1 hour' FROM users p, users g WHERE p.subject = 'sam' AND g.subject = 'tess'`,
		`INSERT INTO delegations (person_id, delegate_id, person_subject, delegate_subject, ends_at, ended_at)
			SELECT p.id, g.id, p.subject, g.subject, now() + interval '1 hour', now() FROM users p, users g WHERE p.subject = 'finn' AND g.subject = 'una'`,
		`INSERT INTO delegations (person_id, delegate_id, person_subject, delegate_subject, starts_at, ends_at)
			SELECT p.id, g.id, p.subject, g.subject, now() - interval '2 hours', now() - interval '1 second' FROM users p, users g WHERE p.subject = 'otto' AND g.subject = 'una'`,
	}
	for _, s := range setup {
		if _, err := store.Pool.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	type item struct {
		owner, deciders, team string
		quorum                int
		escalateTo            string
		escalated             bool
	}
	cases := []struct {
		name string
		item item
		// for: whose place each viewer decides in ("" = may not decide).
		for_ map[string]string
	}{
		{"DelegateDecidesOwnersItem", item{"maya", "owner", "", 1, "", false},
			map[string]string{"maya": "maya", "sam": "maya", "tess": "", "finn": ""}},
		{"ChainInheritsNothing", item{"maya", "owner", "", 1, "", false},
			map[string]string{"tess": ""}},
		{"DelegateOfDelegateDecidesOnlyTheirs", item{"sam", "owner", "", 1, "", false},
			map[string]string{"tess": "sam", "sam": "sam"}},
		{"EndedEarly", item{"finn", "owner", "", 1, "", false},
			map[string]string{"una": "", "finn": "finn"}},
		{"RanOut", item{"otto", "owner", "", 1, "", false},
			map[string]string{"una": "", "otto": "otto"}},
		{"DelegateStandsInForTeamMember", item{"finn", "team", "finance", 1, "", false},
			map[string]string{"sam": "maya", "maya": "maya", "tess": ""}},
		{"QuorumDelegateVotesAsThePerson", item{"fiona", "quorum", "finance", 2, "", false},
			map[string]string{"sam": "maya", "maya": "maya", "finn": "finn"}},
		{"QuorumNeverForOwnAgent", item{"sam", "quorum", "finance", 2, "", false},
			map[string]string{"sam": "", "maya": "maya"}},
		{"QuorumAlreadyCountsDelegate", item{"fiona", "quorum", "finance", 2, "", false},
			map[string]string{"finn": "finn"}},
		{"OwnersQuorumNotDelegable", item{"maya", "quorum", "finance", 2, "", false},
			map[string]string{"maya": "", "sam": ""}},
		{"NotEscalatedYet", item{"finn", "owner", "", 1, "oncall", false},
			map[string]string{"otto": "", "finn": "finn", "sam": ""}},
		{"Escalated", item{"finn", "owner", "", 1, "oncall", true},
			map[string]string{"otto": "otto", "maya": "maya", "sam": "maya", "finn": "finn", "fiona": ""}},
		{"EscalatedQuorumOwnerStillOut", item{"otto", "quorum", "finance", 2, "oncall", true},
			map[string]string{"otto": "", "finn": "finn"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for viewer, want := range c.for_ {
				var team *string
				if c.item.team != "" {
					team = &c.item.team
				}
				var got *string
				var may bool
				err := store.Pool.QueryRow(ctx, `SELECT countersign_deciding_for(ROW(a.*)::approvals, $7), countersign_may_decide(ROW(a.*)::approvals, $7)
					FROM (SELECT (jsonb_populate_record(NULL::approvals, jsonb_build_object(
						'owner_subject', $1::text, 'deciders', $2::text, 'decider_team', $3::text, 'quorum', $4::int,
						'escalate_to', $5::text, 'escalated_at', CASE WHEN $6 THEN now() END))).*) a`,
					c.item.owner, c.item.deciders, team, c.item.quorum, c.item.escalateTo, c.item.escalated, viewer).Scan(&got, &may)
				if err != nil {
					t.Fatal(err)
				}
				g := ""
				if got != nil {
					g = *got
				}
				if g != want || may != (want != "") {
					t.Errorf("viewer %q: decides for %q (may %v), want %q", viewer, g, may, want)
				}
			}
		})
	}
}
