package handlers

import (
	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
)

// followDelegations makes the signed-in person's event stream (sub) hear
// of the inboxes of the people who named them delegate, as of the
// stream's start; a delegation that starts or ends later pokes the
// delegate's own stream, which then re-reads what they may decide. It
// returns the function that stops following.
func (h *Handler) followDelegations(c echo.Context, sub *db.Subscription) (stop func()) {
	u := CurrentUser(c)
	list, err := h.DB.DelegationsTo(c.Request().Context(), u.ID)
	if err != nil || len(list) == 0 {
		return func() {}
	}
	keys := make([]string, 0, len(list))
	for _, d := range list {
		keys = append(keys, db.OwnerKey(d.PersonSubject))
	}
	return h.Hub.SubscribeAlso(sub, keys...)
}
