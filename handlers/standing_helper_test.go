package handlers_test

import (
	"context"
	"testing"
)

// offerStanding turns standing approval on for a tool, as an admin may for
// a destructive tool (new destructive tools start without it), without a
// policy change of its own in the audit.
func (l *loop) offerStanding(t *testing.T, connector, tool string) {
	t.Helper()
	if _, err := l.DB.Pool.Exec(context.Background(), `UPDATE tools SET standing_approval = true WHERE connector = $1 AND name = $2`,
		connector, tool); err != nil {
		t.Fatal(err)
	}
}
