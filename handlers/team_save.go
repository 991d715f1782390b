package handlers

import (
	"net/http"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// TeamCreate makes a team managed here (audited); an invalid name or a
// name taken re-renders the form with the message.
func (h *Handler) TeamCreate(c echo.Context) error {
	req := c.Request()
	name, desc := req.PostFormValue("name"), req.PostFormValue("description")
	err := h.DB.CreateTeam(req.Context(), CurrentUser(c).Actor(), name, desc)
	if e := approval.AsError(err); e != nil && (e.Kind == approval.KindUnprocessable || e.Kind == approval.KindConflict) {
		return h.renderTeams(c, http.StatusUnprocessableEntity, views.TeamsView{Name: name, Description: desc, Error: e.Message})
	}
	if err != nil {
		return err
	}
	h.flash(c, "Team created: "+views.Marked(name)+".", false)
	return redirect(c, "/admin/teams")
}

// TeamDescribe changes a team's description (audited).
func (h *Handler) TeamDescribe(c echo.Context) error {
	req := c.Request()
	return h.teamChanged(c, h.DB.SetTeamDescription(req.Context(), CurrentUser(c).Actor(), req.PostFormValue("team"),
		req.PostFormValue("description")), "Description saved.")
}

// TeamMemberAdd adds a person who has signed in to a team (audited).
func (h *Handler) TeamMemberAdd(c echo.Context) error {
	req := c.Request()
	return h.teamChanged(c, h.DB.AddTeamMember(req.Context(), CurrentUser(c).Actor(), req.PostFormValue("team"),
		req.PostFormValue("subject")), "Member added.")
}

// TeamMemberRemove ends a membership added here (audited); one from the
// identity provider is the provider's to end.
func (h *Handler) TeamMemberRemove(c echo.Context) error {
	req := c.Request()
	return h.teamChanged(c, h.DB.RemoveTeamMember(req.Context(), CurrentUser(c).Actor(), req.PostFormValue("team"),
		req.PostFormValue("subject")), "Member removed.")
}

// teamChanged ends a team form's post: the message as a flash, or the
// page with the problem.
func (h *Handler) teamChanged(c echo.Context, err error, done string) error {
	if e := approval.AsError(err); e != nil && e.Kind == approval.KindUnprocessable {
		return h.renderTeams(c, http.StatusUnprocessableEntity, views.TeamsView{Error: e.Message})
	}
	if err != nil {
		return err
	}
	h.flash(c, done, false)
	return redirect(c, "/admin/teams")
}
