package handlers

import (
	"encoding/json"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
)

// streamMode is what an event stream carries besides the inbox's cards.
type streamMode struct {
	counts    bool // "count" and "arrived" events
	countOnly bool // only those: no cards, no render
	// approvals is the approvals count of each quorum card the stream
	// showed, so that a change is sent ("progress") without moving the card.
	approvals map[string]int
}

// streamCount is the data of a "count" event.
type streamCount struct {
	Count int      `json:"count"`
	IDs   []string `json:"ids"`
}

// streamArrived is the data of an "arrived" event: enough for a desktop
// notification and its link. Argument values never leave in it: a
// notification may show on a locked screen.
type streamArrived struct {
	ID        string `json:"id"`
	Tool      string `json:"tool"`
	Connector string `json:"connector"`
	URL       string `json:"url"`
}

// writeCount sends the number of waiting calls and their ids.
func writeCount(w *echo.Response, pending []db.Approval) error {
	v := streamCount{Count: len(pending), IDs: make([]string, len(pending))}
	for i, a := range pending {
		v.IDs[i] = a.ID
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeEvent(w, "count", string(b))
}

// writeArrived announces one new waiting call. The names go out with their
// hidden characters as markers: a desktop notification shows plain text, and
// a bidi or zero-width character in it would reorder or hide what it says.
func writeArrived(w *echo.Response, a db.Approval) error {
	b, err := json.Marshal(streamArrived{ID: a.ID, Tool: marked(a.ToolDisplay),
		Connector: marked(connectorLabel(a.ConnectorKind, a.ConnectorDisplay)), URL: "/approvals/" + a.ID})
	if err != nil {
		return err
	}
	return writeEvent(w, "arrived", string(b))
}

// marked is a name with each hidden character replaced by its marker.
func marked(s string) string { return approval.Visible(s, approval.SingleLine).String() }
