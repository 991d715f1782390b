package handlers

import (
	"context"
	"net/http"
	"strings"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// TeamList shows the teams, their members and the forms that manage them.
func (h *Handler) TeamList(c echo.Context) error {
	return h.renderTeams(c, http.StatusOK, views.TeamsView{})
}

func (h *Handler) renderTeams(c echo.Context, status int, v views.TeamsView) error {
	ctx := c.Request().Context()
	teams, err := h.DB.ListTeams(ctx)
	if err != nil {
		return err
	}
	if v.People, err = h.people(ctx); err != nil {
		return err
	}
	v.Page = h.Page(c, "Teams", "teams")
	for _, t := range teams {
		row := views.TeamRow{Name: t.Name, Description: t.Description, FromOIDC: t.Source == db.TeamSourceOIDC}
		for _, m := range t.Members {
			words := make([]string, 0, 2)
			for _, s := range m.Sources {
				if s == db.TeamSourceOIDC {
					words = append(words, "identity provider")
				} else {
					words = append(words, "added here")
				}
			}
			row.Members = append(row.Members, views.TeamMemberRow{Subject: m.Subject, Name: m.Name,
				Sources: strings.Join(words, " and "), Removable: strings.Contains(strings.Join(m.Sources, " "), db.TeamSourceAdmin)})
		}
		v.Teams = append(v.Teams, row)
	}
	return Render(c, status, views.Teams(v))
}

// people lists everyone who has signed in, for the member picker.
func (h *Handler) people(ctx context.Context) ([]views.PersonOption, error) {
	users, err := h.DB.People(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]views.PersonOption, 0, len(users))
	for _, u := range users {
		out = append(out, views.PersonOption{Subject: u.Subject, Name: u.DisplayName()})
	}
	return out, nil
}
