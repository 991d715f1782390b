package db

import (
	"context"
	"slices"
	"strings"
	"unicode"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// Team sources: the identity provider's groups claim, or an admin.
const (
	TeamSourceOIDC  = "oidc"
	TeamSourceAdmin = "admin"
)

// Team is a team with its members, for the admin's teams screen.
type Team struct {
	Name        string       `db:"name"`
	Description string       `db:"description"`
	Source      string       `db:"source"`
	Members     []TeamMember `db:"members"`
}

// TeamMember is one member of a team, with how they became one (both
// ways is possible: from the provider and added by an admin).
type TeamMember struct {
	Subject string   `json:"subject"`
	Name    string   `json:"name"`
	Sources []string `json:"sources"`
}

// TeamsOf lists the teams subject belongs to, by name.
func (d *DB) TeamsOf(ctx context.Context, subject string) ([]string, error) {
	rows, err := d.Pool.Query(ctx, `SELECT DISTINCT team FROM team_members WHERE subject = $1 ORDER BY team`, subject)
	if err != nil {
		return nil, translate("teams of", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return list, translate("teams of", err)
}

// ListTeams returns every team with its members, by name.
func (d *DB) ListTeams(ctx context.Context) ([]Team, error) {
	rows, err := d.Pool.Query(ctx, `SELECT t.name, t.description, t.source,
		COALESCE((SELECT jsonb_agg(jsonb_build_object('subject', m.subject, 'name', m.name, 'sources', m.sources) ORDER BY m.name, m.subject)
			FROM (SELECT tm.subject, COALESCE((SELECT COALESCE(NULLIF(u.name, ''), NULLIF(u.email, ''), u.subject) FROM users u
					WHERE u.subject = tm.subject ORDER BY u.id LIMIT 1), tm.subject) AS name,
				jsonb_agg(tm.source ORDER BY tm.source) AS sources
				FROM team_members tm WHERE tm.team = t.name GROUP BY tm.subject) m), '[]'::jsonb) AS members
		FROM teams t ORDER BY t.name`)
	if err != nil {
		return nil, translate("list teams", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Team])
	return list, translate("list teams", err)
}

// CreateTeam makes a team managed in Countersign, audited. A team of the
// same name that came from the identity provider is taken over (it stays,
// and admins may now add members to it); any other existing name is a
// conflict.
func (d *DB) CreateTeam(ctx context.Context, actor approval.Actor, name, description string) error {
	name, description = strings.TrimSpace(name), strings.TrimSpace(description)
	if err := approval.ValidTeamName(name); err != nil {
		return err
	}
	if err := validDescription(description); err != nil {
		return err
	}
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO teams (name, description, source) VALUES ($1, $2, 'admin')
			ON CONFLICT (name) DO UPDATE SET source = 'admin', description = EXCLUDED.description WHERE teams.source = 'oidc'`,
			name, description)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return approval.Errorf(approval.KindConflict, "team_exists", "A team of that name already exists.")
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionTeamCreated,
			Detail: map[string]any{"team": name, "description_given": description != ""}})
	})
	return translate("create team", err)
}

// SetTeamDescription changes a team's description, audited.
func (d *DB) SetTeamDescription(ctx context.Context, actor approval.Actor, name, description string) error {
	description = strings.TrimSpace(description)
	if err := validDescription(description); err != nil {
		return err
	}
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		var before string
		if err := tx.QueryRow(ctx, `SELECT description FROM teams WHERE name = $1 FOR UPDATE`, name).Scan(&before); err != nil {
			return err
		}
		if before == description {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE teams SET description = $2 WHERE name = $1`, name, description); err != nil {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionTeamChanged,
			Detail: map[string]any{"team": name, "description": description}})
	})
	return translate("set team description", err)
}

// AddTeamMember adds the person with subject to team as an admin's
// member, audited. Adding someone already added by an admin changes
// nothing and writes no line.
func (d *DB) AddTeamMember(ctx context.Context, actor approval.Actor, team, subject string) error {
	subject = strings.TrimSpace(subject)
	if subject == "" || len(subject) > 255 || strings.ContainsFunc(subject, unicode.IsControl) {
		return approval.Errorf(approval.KindUnprocessable, approval.CodeInvalidRequest, "Choose a person who has signed in.")
	}
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		var known bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE subject = $1)`, subject).Scan(&known); err != nil {
			return err
		}
		if !known {
			return approval.Errorf(approval.KindUnprocessable, approval.CodeInvalidRequest,
				"Nobody with that identity has signed in yet. People join teams after their first sign-in.")
		}
		if err := tx.QueryRow(ctx, `SELECT name FROM teams WHERE name = $1 FOR SHARE`, team).Scan(new(string)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO team_members (team, subject, source) VALUES ($1, $2, 'admin') ON CONFLICT DO NOTHING`,
			team, subject)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionTeamMemberAdded,
			Detail: map[string]any{"team": team, "member": subject}})
	})
	return translate("add team member", err)
}

// RemoveTeamMember removes an admin's membership of subject in team,
// audited. A membership from the identity provider stays: it is the
// provider's to end (it is refreshed at every sign-in).
func (d *DB) RemoveTeamMember(ctx context.Context, actor approval.Actor, team, subject string) error {
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM team_members WHERE team = $1 AND subject = $2 AND source = 'admin'`, team, subject)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "That person is not a member added here.")
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionTeamMemberRemoved,
			Detail: map[string]any{"team": team, "member": subject}})
	})
	return translate("remove team member", err)
}

// syncProviderTeams makes subject's memberships from the identity provider
// exactly groups, inside the sign-in's transaction: teams the provider
// names are created (source oidc) as needed, and memberships it no longer
// names end. It returns the groups kept, sorted; names that cannot be a
// team's are left out.
func syncProviderTeams(ctx context.Context, tx pgx.Tx, subject string, groups []string) ([]string, error) {
	var keep []string
	for _, g := range groups {
		if approval.ValidTeamName(g) == nil && !slices.Contains(keep, g) && len(keep) < maxProviderTeams {
			keep = append(keep, g)
		}
	}
	slices.Sort(keep)
	if keep == nil {
		keep = []string{}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO teams (name, source) SELECT g, 'oidc' FROM unnest($1::text[]) g ON CONFLICT DO NOTHING`, keep); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM team_members WHERE subject = $1 AND source = 'oidc' AND NOT (team = ANY($2::text[]))`,
		subject, keep); err != nil {
		return nil, err
	}
	_, err := tx.Exec(ctx, `INSERT INTO team_members (team, subject, source) SELECT g, $1, 'oidc' FROM unnest($2::text[]) g
		ON CONFLICT DO NOTHING`, subject, keep)
	return keep, err
}

// maxProviderTeams bounds how many groups of one person are kept.
const maxProviderTeams = 200

func validDescription(s string) error {
	if len([]rune(s)) > 500 || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }) {
		return approval.Errorf(approval.KindUnprocessable, approval.CodeInvalidRequest,
			"A description has at most 500 characters and no control characters.")
	}
	return nil
}

// People lists everyone who has signed in, one row per subject, by name.
func (d *DB) People(ctx context.Context) ([]User, error) {
	rows, err := d.Pool.Query(ctx, `SELECT DISTINCT ON (subject) `+userColumns+` FROM users ORDER BY subject, id`)
	if err != nil {
		return nil, translate("people", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[User])
	slices.SortFunc(list, func(a, b User) int { return strings.Compare(a.DisplayName(), b.DisplayName()) })
	return list, translate("people", err)
}
