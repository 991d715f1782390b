package db_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

// TestMayDecidePredicate walks the approver rules through the one SQL
// predicate every read uses (countersign_may_decide): who may decide an
// item under each rule, with the owner never in a quorum of more than one.
func TestMayDecidePredicate(t *testing.T) {
	ctx := context.Background()
	store, _ := testenv.OpenDB(t)
	setup := []string{
		`INSERT INTO teams (name, source) VALUES ('finance', 'admin'), ('platform', 'oidc')`,
		`INSERT INTO team_members (team, subject, source) VALUES
			('finance', 'maya', 'oidc'), ('finance', 'finn', 'admin'), ('finance', 'fiona', 'oidc'),
			('platform', 'maya', 'oidc'), ('platform', 'sam', 'oidc')`,
	}
	for _, s := range setup {
		if _, err := store.Pool.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	type item struct {
		owner, ownerTeam, deciders, team string
		quorum                           int
	}
	cases := []struct {
		name string
		item item
		may  map[string]bool
	}{
		{"OwnerRule", item{"maya", "", "owner", "", 1},
			map[string]bool{"maya": true, "finn": false, "sam": false, "": false}},
		{"TeamRule", item{"sam", "", "team", "finance", 1},
			map[string]bool{"maya": true, "finn": true, "fiona": true, "sam": false}},
		{"OwnerOrTeam", item{"sam", "", "owner_or_team", "finance", 1},
			map[string]bool{"sam": true, "finn": true, "maya": true, "nobody": false}},
		{"QuorumTwoExcludesOwner", item{"maya", "", "quorum", "finance", 2},
			map[string]bool{"maya": false, "finn": true, "fiona": true, "sam": false}},
		{"QuorumOneCountsOwnerInTeam", item{"maya", "", "quorum", "finance", 1},
			map[string]bool{"maya": true, "finn": true, "sam": false}},
		{"QuorumOwnerOutsideTeam", item{"sam", "", "quorum", "finance", 1},
			map[string]bool{"sam": false, "finn": true}},
		{"TeamKeyOwnerRule", item{"", "platform", "owner", "", 1},
			map[string]bool{"sam": true, "maya": true, "finn": false, "": false}},
		{"TeamKeyQuorum", item{"", "platform", "quorum", "finance", 2},
			map[string]bool{"sam": false, "finn": true, "maya": true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for viewer, want := range c.may {
				var got bool
				var team *string
				if c.item.team != "" {
					team = &c.item.team
				}
				var ownerTeam *string
				if c.item.ownerTeam != "" {
					ownerTeam = &c.item.ownerTeam
				}
				err := store.Pool.QueryRow(ctx, `SELECT countersign_may_decide(ROW(a.*)::approvals, $6)
					FROM (SELECT (jsonb_populate_record(NULL::approvals, jsonb_build_object(
						'owner_subject', $1::text, 'owner_team', $2::text, 'deciders', $3::text,
						'decider_team', $4::text, 'quorum', $5::int))).*) a`,
					c.item.owner, ownerTeam, c.item.deciders, team, c.item.quorum, viewer).Scan(&got)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("viewer %q: may decide = %v, want %v", viewer, got, want)
				}
			}
		})
	}
}
