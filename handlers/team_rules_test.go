package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A policy names only existing teams: a deciding team nobody has (no
// admin's team, no IdP group anyone signed in with) is refused with the
// form re-rendered (422, the input kept), and nothing is saved — so that a
// group of that name created later does not become its deciders.
func TestPolicyUnknownDeciderTeam(t *testing.T) {
	l := newOrgLoop(t)
	ctx := context.Background()
	admin := l.NewBrowser()
	admin.SignIn("admin")
	var id, version int
	if err := l.DB.Pool.QueryRow(ctx, `SELECT id, policy_version FROM tools WHERE connector = 'payments' AND name = 'deploy'`).Scan(&id, &version); err != nil {
		t.Fatal(err)
	}
	for _, deciders := range []string{"team", "owner_or_team", "quorum"} {
		t.Run(deciders, func(t *testing.T) {
			resp, body := admin.PostForm(fmt.Sprint("/admin/policies/", id), url.Values{"mode": {"require_approval"}, "standing_approval": {"1"},
				"version": {fmt.Sprint(version)}, "action": {"confirm"}, "deciders": {deciders}, "decider_team": {"nosuchteam"}, "quorum": {"1"}})
			if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `data-testid="deciders-error"`) ||
				!strings.Contains(visibleText(body), `There is no team named "nosuchteam".`) || !strings.Contains(body, `value="nosuchteam"`) {
				t.Fatalf("%d %s", resp.StatusCode, visibleText(body))
			}
			tool, err := l.DB.ToolByID(ctx, int64(id))
			if err != nil {
				t.Fatal(err)
			}
			if tool.PolicyVersion != version || tool.Rule().Team != "" {
				t.Fatalf("saved anyway: v%d %+v", tool.PolicyVersion, tool.Rule())
			}
		})
	}
}

// Team names refuse hidden characters on the admin's teams screen: the
// form comes back (422) naming the character, and no team is made.
func TestTeamNameHidden(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	for _, name := range []string{"fin\u200bance", "fin\u202eecnanif", "fin\u00a0ance", "fin\u3000ance"} {
		resp, body := admin.PostForm("/admin/teams", url.Values{"name": {name}})
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(visibleText(body), "hidden characters") {
			t.Fatalf("%q: %d %s", name, resp.StatusCode, visibleText(body))
		}
	}
	if n := l.countPlaybookRows(t, `SELECT count(*) FROM teams WHERE name LIKE 'fin%' AND name <> 'finance'`); n != 0 {
		t.Fatalf("%d teams made", n)
	}
}
