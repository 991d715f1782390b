package approval

import (
	"slices"
	"testing"
)

func TestNarrowOffered(t *testing.T) {
	all := AvailableDecisions(true, true)
	if got := NarrowOffered(all, nil); !slices.Equal(got, all) {
		t.Fatalf("nil offered changed the decisions: %v", got)
	}
	if got := NarrowOffered(all, []string{"approve", "reject", "always"}); !slices.Equal(got, []Decision{Approve, AlwaysAllow, Reject}) {
		t.Fatalf("narrowed to %v", got)
	}
	// Approve and Reject stay whatever the runtime says.
	if got := NarrowOffered(all, []string{}); !slices.Equal(got, []Decision{Approve, Reject}) {
		t.Fatalf("empty offered: %v", got)
	}
	// A runtime never widens what the policy offers.
	if got := NarrowOffered(AvailableDecisions(false, false), []string{"approve_conversation", "always"}); !slices.Equal(got, []Decision{Approve, Reject}) {
		t.Fatalf("widened to %v", got)
	}
	for _, bad := range [][]string{{"approve", "approve"}, {"maybe"}, {""}} {
		if CheckOffered(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := CheckOffered([]string{"approve", "approve_conversation", "always", "always_matching", "reject"}); err != nil {
		t.Fatal(err)
	}
}
